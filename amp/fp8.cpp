// amp::fp8::autocast and prepare (amp/fp8.h).
#include "amp/fp8.h"

#include <exception>
#include <vector>

#include "amp/fp8_amax_reduce.h"
#include "csrc/distributed/distributed.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/fp8_amax_sync.h"
#include "csrc/ops/fp8_linear.h"
#include "nn/linear.h"

namespace amp::fp8 {

autocast::autocast(Recipe recipe, bool enabled) : uncaught_exceptions_(std::uncaught_exceptions()) {
  push_autocast(enabled ? std::optional<Recipe>(std::move(recipe)) : std::nullopt);
}

autocast::~autocast() noexcept(false) {
  if (!pop_autocast() || has_initialize_recipe()) return;
  // A region left by an exception did not finish its step: its amaxes are dropped.
  if (std::uncaught_exceptions() > uncaught_exceptions_) {
    drop_pending();
    return;
  }
  reduce_amaxes_across_ranks();
  update_pending(false);
}

void reduce_amaxes_across_ranks() {
  if (!distributed::is_initialized() || distributed::world_size() < 2) return;
  const std::vector<float> local = staged_amaxes();
  Tensor amaxes = from_vector(local, {static_cast<int64_t>(local.size())});
  distributed::all_reduce(amaxes, distributed::ReduceOp::Max);
  set_staged_amaxes(amaxes.to_vector<float>());
}

void prepare(nn::Module& model, const Recipe& recipe) {
  model.apply([&](nn::Module& m) {
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) linear->prepare_fp8(recipe);
  });
}

}  // namespace amp::fp8
