// A predicate for BOOST_CHECK_EXCEPTION on amp::Error: the message holds every one of `words`
// (on a mismatch the message is logged, so a failing check shows what was said instead).
//
//   BOOST_CHECK_EXCEPTION(x.size(0), amp::Error, amp_test::has({"size", "no dimensions"}));
#pragma once

#include <boost/test/unit_test.hpp>
#include <initializer_list>
#include <string>
#include <vector>

#include "csrc/core/error.h"

namespace amp_test {

struct MessageHas {
  std::vector<std::string> words;
  bool operator()(const amp::Error& e) const {
    const std::string m = e.what();
    for (const auto& w : words) {
      if (m.find(w) == std::string::npos) {
        BOOST_TEST_MESSAGE("message \"" << m << "\" lacks \"" << w << "\"");
        return false;
      }
    }
    return true;
  }
};

inline MessageHas has(std::initializer_list<std::string> words) { return MessageHas{words}; }

}  // namespace amp_test
