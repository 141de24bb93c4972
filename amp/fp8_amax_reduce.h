// The amax all-reduce of fp8 delayed scaling across the ranks of amp::distributed (private to
// amp/: amp::fp8::autocast's exit and scale_loss's exit call it just before the update).
#pragma once

namespace amp::fp8 {

// When a process group of more than one rank is initialized: the maximum over ranks of every
// staged amax (csrc/ops/fp8_amax_sync.h), one all_reduce of one tensor per step. Every rank
// must run the same fp8 modules in the same order. Nothing otherwise.
void reduce_amaxes_across_ranks();

}  // namespace amp::fp8
