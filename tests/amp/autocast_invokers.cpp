#include "tests/amp/autocast_invokers.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "tests/amp/autocast_inputs.h"

namespace amp_test {

namespace {
using amp::DType;
using amp::Tensor;
namespace F = amp::nn::functional;
}  // namespace

const std::map<std::string, Invoker>& invokers() {
  static const std::map<std::string, Invoker> table = {
      {"mm",
       [](const Prep& p) {
         return amp::mm(p(signed_values({4, 5}, 1)), p(signed_values({5, 3}, 2)));
       }},
      {"bmm",
       [](const Prep& p) {
         return amp::bmm(p(signed_values({2, 4, 5}, 1)), p(signed_values({2, 5, 3}, 2)));
       }},
      {"matmul",
       [](const Prep& p) {
         return amp::matmul(p(signed_values({2, 4, 5}, 1)), p(signed_values({5, 3}, 2)));
       }},
      {"nn::functional::linear",
       [](const Prep& p) {
         return F::linear(p(signed_values({4, 5}, 1)), p(signed_values({3, 5}, 2)),
                          p(signed_values({3}, 3)));
       }},
      {"nn::functional::conv2d",
       [](const Prep& p) {
         return F::conv2d(p(signed_values({1, 2, 5, 5}, 1)), p(signed_values({3, 2, 3, 3}, 2)),
                          p(signed_values({3}, 3)), 1, 1);
       }},
      {"nn::functional::scaled_dot_product_attention",
       [](const Prep& p) {
         return F::scaled_dot_product_attention(p(signed_values({1, 2, 4, 8}, 1)),
                                                p(signed_values({1, 2, 4, 8}, 2)),
                                                p(signed_values({1, 2, 4, 8}, 3)));
       }},
      {"exp",
       [](const Prep& p) {
         return amp::exp(p(signed_values({3, 5}, 1)));
       }},
      {"log",
       [](const Prep& p) {
         return amp::log(p(positive({3, 5}, 1)));
       }},
      {"rsqrt",
       [](const Prep& p) {
         return amp::rsqrt(p(positive({3, 5}, 1)));
       }},
      {"reciprocal",
       [](const Prep& p) {
         return amp::reciprocal(p(positive({3, 5}, 1)));
       }},
      {"pow(Tensor, double)",
       [](const Prep& p) {
         return amp::pow(p(positive({3, 5}, 1)), 2.5);
       }},
      {"pow(Tensor, Tensor)",
       [](const Prep& p) {
         return amp::pow(p(positive({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"nn::functional::layer_norm",
       [](const Prep& p) {
         return F::layer_norm(p(signed_values({3, 6}, 1)), {6}, p(signed_values({6}, 2)),
                              p(signed_values({6}, 3)));
       }},
      {"nn::functional::group_norm",
       [](const Prep& p) {
         return F::group_norm(p(signed_values({2, 4, 3}, 1)), 2, p(signed_values({4}, 2)),
                              p(signed_values({4}, 3)));
       }},
      {"nn::functional::nll_loss",
       [](const Prep& p) {
         return F::nll_loss(p(values_in({4, 5}, -3, -0.1, 1)), labels({0, 4, 2, 1}));
       }},
      {"nn::functional::cross_entropy",
       [](const Prep& p) {
         return F::cross_entropy(p(signed_values({4, 5}, 1)), labels({0, 4, 2, 1}));
       }},
      {"nn::functional::mse_loss",
       [](const Prep& p) {
         return F::mse_loss(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"nn::functional::l1_loss",
       [](const Prep& p) {
         return F::l1_loss(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"nn::functional::smooth_l1_loss",
       [](const Prep& p) {
         return F::smooth_l1_loss(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"nn::functional::kl_div",
       [](const Prep& p) {
         return F::kl_div(p(values_in({3, 5}, -3, -0.1, 1)), p(probs({3, 5}, 2)));
       }},
      {"nn::functional::binary_cross_entropy_with_logits",
       [](const Prep& p) {
         return F::binary_cross_entropy_with_logits(p(signed_values({3, 5}, 1)),
                                                    p(probs({3, 5}, 2)));
       }},
      {"nn::functional::binary_cross_entropy",
       [](const Prep& p) {
         return F::binary_cross_entropy(p(probs({3, 5}, 1)), p(probs({3, 5}, 2)));
       }},
      {"softmax",
       [](const Prep& p) {
         return amp::softmax(p(signed_values({3, 5}, 1)), 1);
       }},
      {"log_softmax",
       [](const Prep& p) {
         return amp::log_softmax(p(signed_values({3, 5}, 1)), 1);
       }},
      {"sum(Tensor)",
       [](const Prep& p) {
         return amp::sum(p(signed_values({3, 5}, 1)));
       }},
      {"sum(Tensor, dims)",
       [](const Prep& p) {
         return amp::sum(p(signed_values({3, 5}, 1)), {1});
       }},
      {"cat",
       [](const Prep& p) {
         return amp::cat({p(signed_values({2, 3}, 1)), p(signed_values({1, 3}, 2))}, 0);
       }},
      {"stack",
       [](const Prep& p) {
         return amp::stack({p(signed_values({2, 3}, 1)), p(signed_values({2, 3}, 2))}, 0);
       }},
      {"add",
       [](const Prep& p) {
         return amp::add(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"sub",
       [](const Prep& p) {
         return amp::sub(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"mul",
       [](const Prep& p) {
         return amp::mul(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"div",
       [](const Prep& p) {
         return amp::div(p(signed_values({3, 5}, 1)), p(positive({3, 5}, 2)));
       }},
      {"maximum",
       [](const Prep& p) {
         return amp::maximum(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"minimum",
       [](const Prep& p) {
         return amp::minimum(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"rsub",
       [](const Prep& p) {
         return amp::rsub(p(signed_values({3, 5}, 1)), 2.0);
       }},
      {"rdiv",
       [](const Prep& p) {
         return amp::rdiv(p(positive({3, 5}, 1)), 2.0);
       }},
      {"neg",
       [](const Prep& p) {
         return amp::neg(p(signed_values({3, 5}, 1)));
       }},
      {"sqrt",
       [](const Prep& p) {
         return amp::sqrt(p(positive({3, 5}, 1)));
       }},
      {"abs",
       [](const Prep& p) {
         return amp::abs(p(signed_values({3, 5}, 1)));
       }},
      {"sign",
       [](const Prep& p) {
         return amp::sign(p(signed_values({3, 5}, 1)));
       }},
      {"tanh",
       [](const Prep& p) {
         return amp::tanh(p(signed_values({3, 5}, 1)));
       }},
      {"sigmoid",
       [](const Prep& p) {
         return amp::sigmoid(p(signed_values({3, 5}, 1)));
       }},
      {"relu",
       [](const Prep& p) {
         return amp::relu(p(signed_values({3, 5}, 1)));
       }},
      {"gelu",
       [](const Prep& p) {
         return amp::gelu(p(signed_values({3, 5}, 1)));
       }},
      {"erf",
       [](const Prep& p) {
         return amp::erf(p(signed_values({3, 5}, 1)));
       }},
      {"square",
       [](const Prep& p) {
         return amp::square(p(signed_values({3, 5}, 1)));
       }},
      {"clamp",
       [](const Prep& p) {
         return amp::clamp(p(signed_values({3, 5}, 1)), -0.5, 0.5);
       }},
      {"eq",
       [](const Prep& p) {
         return amp::eq(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 1)));
       }},
      {"ne",
       [](const Prep& p) {
         return amp::ne(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"lt",
       [](const Prep& p) {
         return amp::lt(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"le",
       [](const Prep& p) {
         return amp::le(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"gt",
       [](const Prep& p) {
         return amp::gt(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"ge",
       [](const Prep& p) {
         return amp::ge(p(signed_values({3, 5}, 1)), p(signed_values({3, 5}, 2)));
       }},
      {"where",
       [](const Prep& p) {
         return amp::where(amp::gt(signed_values({3, 5}, 3), 0.0), p(signed_values({3, 5}, 1)),
                           p(signed_values({3, 5}, 2)));
       }},
      {"isfinite",
       [](const Prep& p) {
         return amp::isfinite(p(signed_values({3, 5}, 1)));
       }},
      {"mean",
       [](const Prep& p) {
         return amp::mean(p(signed_values({3, 5}, 1)));
       }},
      {"max",
       [](const Prep& p) {
         return amp::max(p(signed_values({3, 5}, 1)));
       }},
      {"min",
       [](const Prep& p) {
         return amp::min(p(signed_values({3, 5}, 1)));
       }},
      {"argmax",
       [](const Prep& p) {
         return amp::argmax(p(signed_values({3, 5}, 1)), 1);
       }},
      {"argmin",
       [](const Prep& p) {
         return amp::argmin(p(signed_values({3, 5}, 1)), 1);
       }},
      {"nn::functional::silu",
       [](const Prep& p) {
         return F::silu(p(signed_values({3, 5}, 1)));
       }},
      {"nn::functional::dropout",
       [](const Prep& p) {
         amp::manual_seed(7);
         return F::dropout(p(signed_values({3, 5}, 1)), 0.5, true);
       }},
      {"nn::functional::embedding",
       [](const Prep& p) {
         return F::embedding(labels({0, 5, 2}), p(signed_values({6, 4}, 1)));
       }},
      {"nn::functional::embedding_backward",
       [](const Prep& p) {
         return F::embedding_backward(p(signed_values({3, 4}, 1)), labels({0, 5, 0}), 6);
       }},
      {"nn::functional::batch_norm",
       [](const Prep& p) {
         return F::batch_norm(p(signed_values({4, 3}, 1)), p(signed_values({3}, 2)),
                              p(positive({3}, 3)), p(signed_values({3}, 4)),
                              p(signed_values({3}, 5)), false);
       }},
      {"nn::functional::max_pool2d",
       [](const Prep& p) {
         return F::max_pool2d(p(signed_values({1, 2, 4, 4}, 1)), 2);
       }},
      {"nn::functional::avg_pool2d",
       [](const Prep& p) {
         return F::avg_pool2d(p(signed_values({1, 2, 4, 4}, 1)), 2);
       }},
      {"nn::functional::unfold",
       [](const Prep& p) {
         return F::unfold(p(signed_values({1, 2, 4, 4}, 1)), 2, 2);
       }},
      {"nn::functional::fold",
       [](const Prep& p) {
         return F::fold(p(signed_values({1, 8, 9}, 1)), 4, 4, 2, 2);
       }},
  };
  return table;
}

Prep to_dtype(DType dtype) {
  return [dtype](const Tensor& t) { return amp::is_floating_point(t.dtype()) ? t.to(dtype) : t; };
}

Prep then(const Prep& first, const Prep& second) {
  return [=](const Tensor& t) { return second(first(t)); };
}

}  // namespace amp_test
