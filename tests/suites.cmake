# Every top-level Boost.Test suite of tests/, with its ctest label (unit, golden, gpu, e2e).
ampcpp_add_suite(half unit)
ampcpp_add_suite(gradcheck unit)
ampcpp_add_suite(gradgradcheck unit)
ampcpp_add_suite(autograd_engine unit)
ampcpp_add_suite(custom_function unit)
ampcpp_add_suite(gradient_penalty unit)
