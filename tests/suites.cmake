# Every top-level Boost.Test suite of tests/, with its ctest label (unit, golden, gpu, e2e).
ampcpp_add_suite(half unit)
ampcpp_add_suite(optimizers golden)
