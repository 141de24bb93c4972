// Boost.Test's data-driven test cases (BOOST_DATA_TEST_CASE), for the table-driven suites.
// GCC 12 at -O3 reports a false -Wrestrict in std::string's operator+ as inlined into the names
// Boost generates for data test cases ("_0", "_1", ...); nothing there copies overlapping memory,
// so the warning is off for the rest of a file that includes this header.
#pragma once
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
