// The canary of the zero-assertion check of tests/main.cpp: a case that checks nothing. It is
// disabled, so ordinary runs skip it; the ctest test
// assertion_check_catches_a_test_that_asserts_nothing selects it and expects the run to name it.
#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(assertion_check_canary, *boost::unit_test::disabled())

BOOST_AUTO_TEST_CASE(asserts_nothing) {}

BOOST_AUTO_TEST_SUITE_END()
