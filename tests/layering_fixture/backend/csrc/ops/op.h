// An op reaching its backend: allowed (cmake/check_layers.cmake, rule 2).
#pragma once

#include "csrc/cpu/loops.h"
