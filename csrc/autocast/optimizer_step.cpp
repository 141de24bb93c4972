#include "csrc/autocast/optimizer_step.h"

#include <utility>

#include "csrc/autocast/cast.h"

namespace amp::autocast_step {

StepGuard::StepGuard() : state_(autocast_state::all_disabled()) {}

std::optional<DType> rounding_wanted(const Tensor& param) {
  return autocast_cast::prepared_cast_wanted(param);
}

void provide_rounding(const Tensor& param, Tensor rounding) {
  autocast_cast::set_prepared_cast(param, std::move(rounding));
}

}  // namespace amp::autocast_step
