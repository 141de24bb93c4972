// An nn/ header reaching past the ops into a backend: downward, so rule 1 lets it pass, but
// cmake/check_layers.cmake must reject it by rule 2.
#pragma once

#include "csrc/cpu/loops.h"
#include "csrc/ops/op.h"
