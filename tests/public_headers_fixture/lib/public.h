// A public header of the fixture that includes a private one (tests/CMakeLists.txt).
#pragma once
#include "lib/private.h"
