// The bridge's own CPU autocast kernels for apex's FP32-list ops that LibTorch's CPU autocast
// leaves in the input dtype (private to ampcpp_libtorch; docs/libtorch.md, "apex's FP32 list under
// O1"). They act only on a thread where amp::libtorch::initialize turned O1 on; elsewhere (an
// amp::libtorch::autocast region: torch.amp's lists) the op runs as LibTorch runs it.
#pragma once

namespace amp::libtorch::detail {

// Whether the calling thread's CPU autocast follows apex's FP32 list (set by initialize at O1,
// cleared by a later initialize on the thread).
void set_apex_fp32_list(bool on);
bool apex_fp32_list_is_on();

}  // namespace amp::libtorch::detail
