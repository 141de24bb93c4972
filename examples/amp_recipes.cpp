// The recipes of PyTorch's "Automatic Mixed Precision examples" page in C++ (typical loop,
// clipping with unscale_, gradient accumulation, gradient penalty, multiple models/losses/
// optimizers, custom autograd functions). Each recipe trains a small classifier twice, in fp32
// and with CPU fp16 autocast + GradScaler, and prints both losses. The code of each recipe is in
// examples/recipes/recipes.cpp.
//
//   ./amp_recipes                       # every recipe, 150 steps
//   ./amp_recipes --recipe penalty --steps 300
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "amp/amp.h"
#include "examples/command_line.h"
#include "examples/recipes/recipes.h"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  std::string only;
  int steps = 150;
  po::options_description options("amp_recipes: torch.amp's recipes with ampcpp");
  options.add_options()("help", "show this help")(
      "recipe", po::value(&only),
      "run one recipe (typical, clipping, accumulation, penalty, "
      "multiple_models, custom_function)")("steps", po::value(&steps)->default_value(steps),
                                           "optimizer steps per run");
  po::variables_map vm;
  try {
    po::store(amp::examples::parse_command_line_strictly(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (steps < 5) {
    std::cerr << "expected --steps >= 5, got " << steps << "\n";
    return 2;
  }
  bool found = only.empty();
  std::cout << "| recipe | what | fp32 loss (first -> last) | fp16 autocast + GradScaler loss "
               "(first -> last) | skipped steps | final scale |\n|---|---|---|---|---|---|\n";
  try {
    for (const amp::recipes::Recipe& recipe : amp::recipes::all()) {
      if (!only.empty() && recipe.name != only) continue;
      found = true;
      const amp::recipes::RecipeResult fp32 = recipe.run(false, steps);
      const amp::recipes::RecipeResult mixed = recipe.run(true, steps);
      std::printf("| %s | %s | %.4f -> %.4f | %.4f -> %.4f | %d | %.1f |\n", recipe.name.c_str(),
                  recipe.description.c_str(), fp32.first_loss, fp32.final_loss, mixed.first_loss,
                  mixed.final_loss, mixed.skipped_steps, mixed.final_scale);
      std::fflush(stdout);
    }
  } catch (const amp::Error& e) {
    std::cerr << "amp_recipes: " << e.what() << "\n";
    return 1;
  }
  if (!found) {
    std::cerr << "amp_recipes: no recipe named \"" << only << "\"\n";
    return 2;
  }
  return 0;
}
