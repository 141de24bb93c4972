// Entry point of the ampcpp test executable; suites live in one file per area.
#define BOOST_TEST_MODULE ampcpp
#include <boost/test/unit_test.hpp>
