# Every top-level Boost.Test suite of tests/, with its ctest label (unit, golden, gpu, e2e).
ampcpp_add_suite(half unit)
ampcpp_add_suite(nn_conv golden)
ampcpp_add_suite(nn_module unit)
ampcpp_add_suite(nn_layers golden)
