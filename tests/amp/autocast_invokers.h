// One call of every op of the autocast policy table (csrc/autocast/policy.cpp), keyed by the
// table's op name, on deterministic inputs that each caller prepares (casts) first: the autocast
// suite (tests/amp/test_autocast.cpp) and the apex O1 list suite (test_apex_o1_lists.cpp) run them
// under autocast and against manually cast controls.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "amp/amp.h"

namespace amp_test {

// Prepares a floating input (integer and bool inputs pass through untouched).
using Prep = std::function<amp::Tensor(const amp::Tensor&)>;
using Invoker = std::function<amp::Tensor(const Prep&)>;

// One call of every op in the policy table, keyed by the table's op name.
const std::map<std::string, Invoker>& invokers();

// Casts floating inputs to dtype.
Prep to_dtype(amp::DType dtype);
// first, then second.
Prep then(const Prep& first, const Prep& second);

}  // namespace amp_test
