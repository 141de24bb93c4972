/// \file
/// AMPCPP_API marks what the shared library exports. The library is compiled with hidden
/// visibility (CMakeLists.txt), so a class, function or variable is part of the binary interface
/// only when its declaration in a public header says so: `class AMPCPP_API Tensor`,
/// `AMPCPP_API Tensor matmul(...)`. Templates and inline functions need no mark (the user's
/// program instantiates them), unless the library instantiates them explicitly for the user.
/// docs/architecture.md, "Public and private headers", lists what a public header may export.
#pragma once

/// Exports the declaration it marks from the shared library (default ELF visibility).
#define AMPCPP_API __attribute__((visibility("default")))
