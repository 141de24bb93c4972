/// \file
/// The staged amaxes of this step's fp8 delayed-scaling states as one flat vector, so that a
/// higher layer (amp/fp8_amax_reduce.h: the all-reduce across ranks) can combine them before
/// the update, in one collective per step (Transformer Engine's reduce_amax). Private.
#pragma once
#include <vector>

namespace amp::fp8 {

/// The staging rows (3 floats each) of the states whose forward ran since the last update, in
/// the order their forwards first ran (the same on every rank that runs the same model), NaN
/// written as +inf (so that a max over ranks keeps it and the step is skipped everywhere).
std::vector<float> staged_amaxes();

/// Writes `amaxes` (as staged_amaxes returned them, combined) back into the same staging rows.
/// amp::Error when the length differs from staged_amaxes()'s.
void set_staged_amaxes(const std::vector<float>& amaxes);

}  // namespace amp::fp8
