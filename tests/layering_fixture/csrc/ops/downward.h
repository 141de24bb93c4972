// An ops header using the core: allowed, and not reported.
#pragma once

#include "csrc/core/upward.h"
