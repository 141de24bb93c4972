#include "csrc/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "csrc/autograd/engine.h"
#include "csrc/core/macros.h"
#include "csrc/graph/grad_mode.h"
#include "csrc/ops/factories.h"
#include "csrc/ops/shape_ops.h"

namespace amp::autograd {

namespace {

// fn's output flattened to doubles. Grad mode stays on: fn may itself differentiate (the first
// derivative that gradgradcheck checks).
std::vector<double> evaluate(const DifferentiableFn& fn, const std::vector<Tensor>& inputs) {
  return fn(inputs).to_vector<double>();
}

}  // namespace

GradcheckResult gradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  // Private contiguous copies: the numerical Jacobian perturbs them in place.
  std::vector<Tensor> work;
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined()) {
      work.push_back(in);
      continue;
    }
    Tensor copy = in.detach().clone();
    if (in.requires_grad()) {
      AMP_CHECK(in.dtype() == DType::Float64,
                "gradcheck: expected Float64 inputs for accurate "
                "finite differences, got ",
                dtype_name(in.dtype()), " at input ", i);
      copy.requires_grad_();
      checked.push_back(i);
    }
    work.push_back(copy);
  }
  AMP_CHECK(!checked.empty(), "gradcheck: expected at least one input that requires grad");

  const Tensor output = fn(work);
  const int64_t n_out = output.numel();
  GradcheckResult result;
  std::vector<Tensor> checked_inputs;
  for (size_t i : checked) checked_inputs.push_back(work[i]);

  // Analytic Jacobian, one row per output element.
  std::vector<std::vector<std::vector<double>>> analytic(checked.size());
  for (int64_t o = 0; o < n_out; ++o) {
    Tensor seed = zeros(output.sizes(), {.dtype = output.dtype(), .device = output.device()});
    {
      NoGradGuard no_grad;
      seed.reshape({-1}).narrow(0, o, 1).fill_(1.0);
    }
    std::vector<Tensor> rows;
    if (output.requires_grad()) {
      rows = run_backward({output}, {seed}, /*keep_graph=*/true, false, checked_inputs,
                          /*allow_unused=*/true);
    } else {
      rows.resize(checked.size());
    }
    for (size_t c = 0; c < checked.size(); ++c) {
      const int64_t n = work[checked[c]].numel();
      analytic[c].push_back(rows[c].defined() ? rows[c].to_vector<double>()
                                              : std::vector<double>(n, 0.0));
    }
  }

  // Numerical Jacobian by central differences, compared entry by entry.
  for (size_t c = 0; c < checked.size(); ++c) {
    Tensor& x = work[checked[c]];
    double* data = x.data<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double original = data[j];
      data[j] = original + options.eps;
      const std::vector<double> plus = evaluate(fn, work);
      data[j] = original - options.eps;
      const std::vector<double> minus = evaluate(fn, work);
      data[j] = original;
      for (int64_t o = 0; o < n_out; ++o) {
        const double numeric = (plus[o] - minus[o]) / (2 * options.eps);
        const double a = analytic[c][o][j];
        const double err = std::abs(a - numeric);
        result.max_abs_error = std::max(result.max_abs_error, err);
        if (result.ok && !(err <= options.atol + options.rtol * std::abs(numeric))) {
          std::ostringstream msg;
          msg << "gradcheck: Jacobian mismatch for output element " << o << " with respect to "
              << "input " << checked[c] << " element " << j << ": analytic " << a << ", numerical "
              << numeric << " (atol " << options.atol << ", rtol " << options.rtol << ")";
          result.ok = false;
          result.message = msg.str();
        }
      }
    }
  }
  return result;
}

GradcheckResult gradgradcheck(const DifferentiableFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  std::vector<size_t> differentiable;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) differentiable.push_back(i);
  }
  AMP_CHECK(!differentiable.empty(),
            "gradgradcheck: expected at least one input that requires "
            "grad");
  Shape out_shape;
  {
    NoGradGuard no_grad;
    out_shape = fn(inputs).sizes();
  }
  // The first derivative as a function of the inputs and of the output gradient v.
  const size_t n = inputs.size();
  const DifferentiableFn first_derivative = [&](const std::vector<Tensor>& args) {
    std::vector<Tensor> xs(args.begin(), args.begin() + static_cast<int64_t>(n));
    const Tensor& v = args[n];
    const Tensor out = fn(xs);
    std::vector<Tensor> wrt;
    for (size_t i : differentiable) wrt.push_back(xs[i]);
    const std::vector<Tensor> grads =
        run_backward({out}, {v}, /*keep_graph=*/true, /*create_graph=*/true, wrt, true);
    std::vector<Tensor> flat;
    for (size_t k = 0; k < grads.size(); ++k) {
      flat.push_back(grads[k].defined() ? grads[k].reshape({-1})
                                        : zeros({wrt[k].numel()}, {.dtype = DType::Float64}));
    }
    return cat(flat, 0);
  };
  std::vector<Tensor> args = inputs;
  args.push_back(randn(out_shape, {.dtype = DType::Float64, .requires_grad = true}));
  return gradcheck(first_derivative, args, options);
}

}  // namespace amp::autograd
