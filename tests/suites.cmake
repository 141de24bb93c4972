# Every top-level Boost.Test suite of tests/, with its ctest label (unit, golden, gpu, e2e).
ampcpp_add_suite(half unit)
ampcpp_add_suite(multi_tensor unit)
ampcpp_add_suite(gpu_multi_tensor gpu)
