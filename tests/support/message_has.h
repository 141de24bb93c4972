// Checking amp::Error messages in tests. `has`: a predicate for BOOST_CHECK_EXCEPTION, true when
// the message holds every one of `words` (on a mismatch the message is logged, so a failing check
// shows what was said instead). `error_of`: the message a call throws, "" when it throws none.
// `check_error`: requires a call to throw one whose message holds every part.
//
//   BOOST_CHECK_EXCEPTION(x.size(0), amp::Error, amp_test::has({"size", "no dimensions"}));
//   BOOST_TEST(amp_test::error_of([&] { x.size(0); }).find("size") == 0);
#pragma once

#include <boost/test/unit_test.hpp>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "csrc/core/error.h"
#include "tests/support/error_of.h"

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

// Requires fn to throw amp::Error whose message contains every part.
inline void check_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  const std::string message = error_of(fn);
  BOOST_TEST_REQUIRE(!message.empty(), "expected an amp::Error containing '" << parts[0] << "'");
  for (const std::string& part : parts) {
    BOOST_TEST(message.find(part) != std::string::npos,
               "message '" << message << "' lacks '" << part << "'");
  }
}

}  // namespace amp_test
