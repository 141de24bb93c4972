// amp::state_dict / amp::load_state_dict: the loss scalers' checkpoint (apex/amp/frontend.py).
#include <charconv>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "amp/amp_state.h"
#include "amp/initialize.h"
#include "csrc/core/macros.h"
#include "csrc/multi_tensor/master_weights.h"
#include "csrc/ops/factories.h"

namespace amp {

namespace {

constexpr std::string_view kPrefix = "loss_scaler";

struct ScalerEntry {
  std::optional<double> loss_scale;
  std::optional<int64_t> unskipped;
};

// "loss_scaler<N>.<field>" -> (N, field); nullopt for any other key.
std::optional<std::pair<size_t, std::string>> parse_key(const std::string& key) {
  if (key.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  const size_t dot = key.find('.', kPrefix.size());
  if (dot == std::string::npos || dot == kPrefix.size()) return std::nullopt;
  size_t index = 0;
  const char* first = key.data() + kPrefix.size();
  const char* last = key.data() + dot;
  const auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last) return std::nullopt;
  std::string field = key.substr(dot + 1);
  if (field != "loss_scale" && field != "unskipped") return std::nullopt;
  return std::make_pair(index, std::move(field));
}

double scalar_of(const std::string& key, const Tensor& t) {
  AMP_CHECK(t.defined() && t.numel() == 1 && t.dtype() != DType::Bool,
            "amp::load_state_dict: expected '", key, "' to hold one number");
  return t.item<double>();
}

}  // namespace

StateDict state_dict() {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  AMP_CHECK(state.initialized, "amp::state_dict: amp::initialize has not been called");
  StateDict out;
  for (size_t i = 0; i < state.loss_scalers.size(); ++i) {
    const std::string prefix = std::string(kPrefix) + std::to_string(i) + ".";
    const LossScaler& s = state.loss_scalers[i];
    out[prefix + "loss_scale"] = scalar_tensor(s.loss_scale(), {.dtype = DType::Float64});
    out[prefix + "unskipped"] =
        scalar_tensor(static_cast<double>(s.unskipped()), {.dtype = DType::Int64});
  }
  return out;
}

void load_state_dict(const StateDict& sd) {
  detail::AmpState& state = detail::amp_state();
  std::lock_guard<std::mutex> lock(state.mutex);
  AMP_CHECK(state.initialized, "amp::load_state_dict: amp::initialize has not been called");
  // 1. Sort and check every key; nothing changes until all are good.
  std::map<size_t, ScalerEntry> entries;
  std::vector<std::string> unexpected;
  for (const auto& [key, value] : sd) {
    const auto parsed = parse_key(key);
    if (!parsed) {
      unexpected.push_back(key);
      continue;
    }
    ScalerEntry& e = entries[parsed->first];
    const double v = scalar_of(key, value);
    if (parsed->second == "loss_scale") {
      AMP_CHECK(std::isfinite(v) && v > 0, "amp::load_state_dict: expected '", key,
                "' to be a finite loss scale > 0, got ", v);
      e.loss_scale = v;
    } else {
      AMP_CHECK(v >= 0 && v == std::floor(v) && v < 9007199254740992.0,
                "amp::load_state_dict: expected '", key, "' to be a whole number >= 0, got ", v);
      e.unskipped = static_cast<int64_t>(v);
    }
  }
  if (!unexpected.empty()) {
    std::ostringstream msg;
    msg << "Error(s) in loading state_dict. Unexpected key(s) in state_dict: ";
    for (size_t i = 0; i < unexpected.size(); ++i) {
      msg << (i ? ", " : "") << "\"" << unexpected[i] << "\"";
    }
    msg << ". (expected only 'loss_scalerN.loss_scale' and 'loss_scalerN.unskipped')";
    throw Error(msg.str());
  }
  for (const auto& [index, e] : entries) {
    AMP_CHECK(e.loss_scale && e.unskipped, "amp::load_state_dict: loss_scaler", index,
              " needs both 'loss_scaler", index, ".loss_scale' and 'loss_scaler", index,
              ".unskipped'");
  }
  // 2. Load, with apex's messages for a different number of scalers.
  const size_t used = state.loss_scalers.size();
  if (entries.size() != used) {
    std::cout << "Warning: state_dict contains " << entries.size() << " entries, while " << used
              << " loss_scalers are used" << std::endl;
  }
  // Loaded into copies: an entry LossScaler::load rejects leaves every scaler as it was.
  std::vector<LossScaler> loaded = state.loss_scalers;
  for (const auto& [index, e] : entries) {
    if (index >= used) {
      std::cout << "Skipping loss_scaler[" << index << "], since num_losses was set to " << used
                << std::endl;
      continue;
    }
    loaded[index].load(*e.loss_scale, *e.unskipped);
  }
  state.loss_scalers = std::move(loaded);
  // A skip still pending reports the loaded scale at the skipped step, as apex's does.
  for (const auto& [index, e] : entries) {
    if (index >= used) continue;
    const int loss_id = static_cast<int>(index);
    multi_tensor::MasterWeights::instance().reword_pending_skips(
        loss_id, detail::skip_message(state, loss_id));
  }
}

}  // namespace amp
