#pragma once

#include <map>
#include <string>

#include "csrc/core/tensor.h"

namespace amp {
using StateDict = std::map<std::string, Tensor>;
}
