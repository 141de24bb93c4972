// The recipes of PyTorch's "Automatic Mixed Precision examples" page, written with ampcpp's
// amp::autocast and amp::GradScaler: each trains a small classifier on a fixed synthetic task.
// Run with mixed = true they use CPU fp16 autocast and a GradScaler; with mixed = false the same
// code runs in fp32 (autocast and scaler disabled), which is the reference a test compares with.
// Used by examples/amp_recipes.cpp and tests/e2e/test_amp_recipes.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace amp::recipes {

struct RecipeResult {
  double first_loss = 0;   // mean loss of the first 5 optimizer steps
  double final_loss = 0;   // mean loss of the last 5 optimizer steps
  int skipped_steps = 0;   // GradScaler skipped optimizer steps (non-finite gradients)
  double final_scale = 1;  // the GradScaler's scale after training (1 when disabled)
};

struct Recipe {
  std::string name;         // "typical", "clipping", ...
  std::string description;  // one line
  std::function<RecipeResult(bool mixed, int steps)> run;
};

// typical, clipping, accumulation, penalty, multiple_models, custom_function.
const std::vector<Recipe>& all();

}  // namespace amp::recipes
