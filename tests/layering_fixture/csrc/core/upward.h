// A core header reaching up into ops: cmake/check_layers.cmake must reject this include.
#pragma once

#include "csrc/ops/downward.h"
