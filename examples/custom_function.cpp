// A custom autograd function and its finite-difference checks.
//
// Softplus(x; beta) = log(1 + exp(beta x)) / beta, written as an amp::autograd::Function: the
// forward saves its input and beta, the backward returns grad * sigmoid(beta x). The backward
// uses differentiable ops, so the function also has second derivatives (create_graph=true).
// The program checks the first derivative with gradcheck and the second with gradgradcheck, in
// Float64, and prints both results. --wrong-backward drops the factor sigmoid(beta x) to show
// what a failing check prints.
//
//   ./custom_function --size 6 --beta 2
#include <boost/program_options.hpp>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "examples/command_line.h"

namespace po = boost::program_options;

namespace {

// Set from the command line: whether Softplus's backward leaves out sigmoid(beta x).
bool wrong_backward = false;

struct Softplus : amp::autograd::Function<Softplus> {
  static amp::Tensor forward(amp::autograd::AutogradContext* ctx, const amp::Tensor& x,
                             double beta) {
    ctx->save_for_backward({x});
    ctx->saved_data["beta"] = beta;
    // Ops in a forward are not recorded: the function is one node of the graph.
    return amp::log(amp::exp(x * beta) + 1.0) / beta;
  }

  static std::vector<amp::Tensor> backward(amp::autograd::AutogradContext* ctx,
                                           const std::vector<amp::Tensor>& grads) {
    const amp::Tensor x = ctx->get_saved_variables()[0];
    const double beta = std::get<double>(ctx->saved_data.at("beta"));
    if (wrong_backward) return {grads[0]};
    // One gradient per tensor input of forward (beta is not a tensor).
    return {grads[0] * amp::sigmoid(x * beta)};
  }
};

void print_result(const std::string& name, const amp::autograd::GradcheckResult& result) {
  std::cout << std::left << std::setw(15) << name << (result.ok ? "passed" : "FAILED")
            << "  max |analytic - numerical| = " << std::scientific << std::setprecision(3)
            << result.max_abs_error << std::defaultfloat << "\n";
  if (!result.ok) std::cout << "  " << result.message << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  int64_t size = 5;
  double beta = 1.5;
  uint64_t seed = 0;
  po::options_description options("custom_function: a custom autograd function, gradchecked");
  options.add_options()("help", "show this help")("size", po::value(&size)->default_value(size),
                                                  "number of input elements")(
      "beta", po::value(&beta)->default_value(beta), "Softplus sharpness")(
      "seed", po::value(&seed)->default_value(seed), "random seed of the input")(
      "wrong-backward", po::bool_switch(&wrong_backward), "use a wrong backward (check fails)");
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
  if (size < 1 || beta <= 0) {
    std::cerr << "expected --size >= 1 and --beta > 0, got " << size << " and " << beta << "\n";
    return 2;
  }

  std::cout << "| option         | value |\n|----------------|-------|\n"
            << "| size           | " << size << " |\n| beta           | " << beta << " |\n"
            << "| seed           | " << seed << " |\n| wrong-backward | "
            << (wrong_backward ? "true" : "false") << " |\n\n";

  try {
    amp::manual_seed(seed);
    const amp::Tensor x = amp::randn({size}, {.dtype = amp::DType::Float64, .requires_grad = true});

    // The function inside a larger graph: loss = sum(Softplus(x)^2).
    const amp::Tensor y = Softplus::apply(x, beta);
    (y * y).sum().backward();
    std::cout << "x               " << x << "\n";
    std::cout << "Softplus(x)     " << y << "\n";
    std::cout << "grad_fn         " << y.grad_fn()->name() << "\n";
    std::cout << "d sum(y^2) / dx " << x.grad() << "\n\n";

    const amp::autograd::DifferentiableFn fn = [beta](const std::vector<amp::Tensor>& in) {
      return Softplus::apply(in[0], beta);
    };
    const amp::autograd::GradcheckResult first = amp::autograd::gradcheck(fn, {x});
    const amp::autograd::GradcheckResult second = amp::autograd::gradgradcheck(fn, {x});
    print_result("gradcheck", first);
    print_result("gradgradcheck", second);
    return first.ok && second.ok ? 0 : 1;
  } catch (const amp::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
