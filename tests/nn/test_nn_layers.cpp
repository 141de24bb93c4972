// nn layers and losses against golden values from PyTorch (tests/reference/make_nn_golden.py),
// in fp32, in fp16/bf16 (within 16-bit tolerances of the fp32 values), and against finite
// differences in fp64 (gradcheck, gradgradcheck). Adding a case to the table adds all checks.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "nn/activation.h"
#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/flatten.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/normalization.h"
#include "tests/support/check_close.h"
#include "tests/support/golden_file.h"

using namespace amp;
namespace F = amp::nn::functional;
using Inputs = std::map<std::string, Tensor>;
using amp_test::check_close;

namespace {

// The tensors of tests/data/nn_golden/<name>.txt: f32 as Float32, i64 as Int64.
Inputs load_golden(const std::string& name) {
  Inputs out;
  for (const auto& [tname, t] : amp_test::golden::read_tensors("nn_golden/" + name + ".txt")) {
    out[tname] =
        from_vector(t.values, t.shape, {.dtype = t.type == "i64" ? DType::Int64 : DType::Float32});
  }
  return out;
}

using Fn = std::function<Tensor(const Inputs&)>;

struct Case {
  std::string name;
  Fn fn;
  bool low_precision = false;  // also run in fp16 and bf16
  bool second_order = false;   // also gradgradcheck
};

F::Reduction reduction_of(const std::string& r) {
  if (r == "none") return F::Reduction::None;
  if (r == "sum") return F::Reduction::Sum;
  return F::Reduction::Mean;
}

std::vector<Case> cases() {
  std::vector<Case> c = {
      {"linear", [](const Inputs& in) { return F::linear(in.at("x"), in.at("w"), in.at("b")); },
       true, true},
      {"linear_3d", [](const Inputs& in) { return F::linear(in.at("x"), in.at("w"), in.at("b")); },
       true},
      {"linear_nobias", [](const Inputs& in) { return F::linear(in.at("x"), in.at("w")); }, true},
      {"relu", [](const Inputs& in) { return F::relu(in.at("x")); }, true},
      {"gelu", [](const Inputs& in) { return F::gelu(in.at("x")); }, true, true},
      {"gelu_tanh", [](const Inputs& in) { return F::gelu(in.at("x"), "tanh"); }, true},
      {"silu", [](const Inputs& in) { return F::silu(in.at("x")); }, true, true},
      {"tanh", [](const Inputs& in) { return amp::tanh(in.at("x")); }, true},
      {"sigmoid", [](const Inputs& in) { return amp::sigmoid(in.at("x")); }, true},
      {"softmax", [](const Inputs& in) { return F::softmax(in.at("x"), 1); }, true},
      {"log_softmax", [](const Inputs& in) { return F::log_softmax(in.at("x"), 1); }, true},
      {"layer_norm",
       [](const Inputs& in) { return F::layer_norm(in.at("x"), {4}, in.at("w"), in.at("b")); },
       true, true},
      {"layer_norm_2d",
       [](const Inputs& in) {
         return F::layer_norm(in.at("x"), {3, 4}, in.at("w"), in.at("b"), 1e-3);
       },
       true},
      {"group_norm",
       [](const Inputs& in) { return F::group_norm(in.at("x"), 3, in.at("w"), in.at("b")); }, true,
       true},
      {"embedding", [](const Inputs& in) { return F::embedding(in.at("idx"), in.at("w")); }, true,
       true},
      {"cross_entropy_3d_mean",
       [](const Inputs& in) { return F::cross_entropy(in.at("x"), in.at("t")); }, true, true},
      {"cross_entropy_probs_mean",
       [](const Inputs& in) {
         return F::cross_entropy(in.at("x"), in.at("t"), F::Reduction::Mean, 0.1);
       }},
      {"kl_div_batchmean",
       [](const Inputs& in) { return F::kl_div(in.at("x"), in.at("y"), F::Reduction::BatchMean); }},
      {"kl_div_log_target_sum",
       [](const Inputs& in) {
         return F::kl_div(in.at("x"), in.at("y"), F::Reduction::Sum, /*log_target=*/true);
       }},
      {"smooth_l1_loss_beta0_mean",
       [](const Inputs& in) {
         return F::smooth_l1_loss(in.at("x"), in.at("y"), F::Reduction::Mean, 0.0);
       }},
  };
  for (const std::string r : {"none", "mean", "sum"}) {
    const F::Reduction red = reduction_of(r);
    c.push_back({"cross_entropy_" + r,
                 [red](const Inputs& in) { return F::cross_entropy(in.at("x"), in.at("t"), red); },
                 true, r == "mean"});
    c.push_back({"cross_entropy_smooth_" + r, [red](const Inputs& in) {
                   return F::cross_entropy(in.at("x"), in.at("t"), red, 0.1);
                 }});
    c.push_back({"cross_entropy_ignore_" + r, [red](const Inputs& in) {
                   return F::cross_entropy(in.at("x"), in.at("t"), red, 0.2);
                 }});
    c.push_back({"nll_loss_" + r,
                 [red](const Inputs& in) { return F::nll_loss(in.at("x"), in.at("t"), red); },
                 true});
    c.push_back({"mse_loss_" + r,
                 [red](const Inputs& in) { return F::mse_loss(in.at("x"), in.at("y"), red); },
                 true});
    c.push_back({"l1_loss_" + r,
                 [red](const Inputs& in) { return F::l1_loss(in.at("x"), in.at("y"), red); }});
    c.push_back({"smooth_l1_loss_" + r, [red](const Inputs& in) {
                   return F::smooth_l1_loss(in.at("x"), in.at("y"), red, 0.5);
                 }});
    c.push_back(
        {"binary_cross_entropy_" + r,
         [red](const Inputs& in) { return F::binary_cross_entropy(in.at("x"), in.at("y"), red); },
         true, r == "mean"});
    c.push_back({"bce_with_logits_" + r,
                 [red](const Inputs& in) {
                   return F::binary_cross_entropy_with_logits(in.at("x"), in.at("y"), red);
                 },
                 true, r == "mean"});
    c.push_back({"bce_with_logits_pos_weight_" + r, [red](const Inputs& in) {
                   return F::binary_cross_entropy_with_logits(in.at("x"), in.at("y"), red,
                                                              in.at("pw"));
                 }});
    c.push_back({"kl_div_" + r,
                 [red](const Inputs& in) { return F::kl_div(in.at("x"), in.at("y"), red); }});
  }
  return c;
}

// The golden inputs (every non-output tensor) converted to `dtype` where floating, with
// requires_grad on those whose gradient the golden file holds.
Inputs prepare_inputs(const Inputs& golden, DType dtype) {
  Inputs in;
  for (const auto& [name, t] : golden) {
    if (name == "out" || name == "gy" || name.rfind("grad.", 0) == 0) continue;
    Tensor x = is_floating_point(t.dtype()) ? t.to(dtype) : t;
    if (golden.count("grad." + name)) x.requires_grad_(true);
    in[name] = x;
  }
  return in;
}

// Runs a case in `dtype` and compares output and input gradients with the fp32 golden values.
void run_against_golden(const Case& c, DType dtype, const amp_test::CloseTolerance& tol) {
  const Inputs golden = load_golden(c.name);
  const Inputs in = prepare_inputs(golden, dtype);
  const Tensor out = c.fn(in);
  const std::string tag = c.name + " [" + dtype_name(dtype) + "]";
  BOOST_TEST(dtype_name(out.dtype()) == dtype_name(dtype), tag << ": output dtype");
  check_close(out, golden.at("out"), tol, tag + " output");
  if (golden.count("gy")) {
    out.backward(golden.at("gy").to(out.dtype()));
  } else {
    out.backward();
  }
  for (const auto& [name, t] : in) {
    if (!golden.count("grad." + name)) continue;
    BOOST_TEST(dtype_name(t.grad().dtype()) == dtype_name(dtype), tag << ": grad dtype");
    check_close(t.grad(), golden.at("grad." + name), tol, tag + " grad." + name);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(nn_layers)

BOOST_AUTO_TEST_CASE(every_layer_and_loss_matches_pytorch_in_fp32) {
  for (const Case& c : cases()) run_against_golden(c, DType::Float32, {.atol = 1e-6, .rtol = 1e-5});
}

BOOST_AUTO_TEST_CASE(layers_and_losses_in_fp16_are_within_half_tolerance_of_fp32) {
  for (const Case& c : cases()) {
    if (c.low_precision) run_against_golden(c, DType::Float16, {.atol = 1e-2, .rtol = 1e-2});
  }
}

BOOST_AUTO_TEST_CASE(layers_and_losses_in_bf16_are_within_bfloat16_tolerance_of_fp32) {
  for (const Case& c : cases()) {
    if (c.low_precision) run_against_golden(c, DType::BFloat16, {.atol = 4e-2, .rtol = 4e-2});
  }
}

BOOST_AUTO_TEST_CASE(every_layer_and_loss_passes_gradcheck_in_fp64) {
  for (const Case& c : cases()) {
    const Inputs golden = load_golden(c.name);
    const Inputs in = prepare_inputs(golden, DType::Float64);
    std::vector<std::string> names;
    std::vector<Tensor> values;
    for (const auto& [name, t] : in) {
      names.push_back(name);
      values.push_back(t);
    }
    const Fn fn = c.fn;
    const autograd::DifferentiableFn wrapped = [fn, names](const std::vector<Tensor>& xs) {
      Inputs m;
      for (size_t i = 0; i < names.size(); ++i) m[names[i]] = xs[i];
      return fn(m);
    };
    const auto result = autograd::gradcheck(wrapped, values);
    BOOST_CHECK_MESSAGE(result.ok, c.name << ": " << result.message);
    if (c.second_order) {
      const auto second = autograd::gradgradcheck(wrapped, values);
      BOOST_CHECK_MESSAGE(second.ok, c.name << " (second order): " << second.message);
    }
  }
}

BOOST_AUTO_TEST_CASE(linear_default_init_is_bounded_by_one_over_sqrt_fan_in) {
  manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(16, 32);
  const double bound = 1.0 / std::sqrt(16.0);
  for (const Tensor& p : lin->parameters()) {
    const auto v = p.to_vector<double>();
    double lo = 1, hi = -1;
    for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
    BOOST_TEST(lo >= -bound);
    BOOST_TEST(hi <= bound);
    BOOST_TEST(hi - lo > bound);  // spread over the interval, not constant
  }
  BOOST_TEST((lin->weight.sizes() == Shape{32, 16}));
  BOOST_TEST(!std::make_shared<nn::Linear>(3, 2, false)->bias.defined());
}

BOOST_AUTO_TEST_CASE(linear_module_matches_functional_and_casts_with_to) {
  auto lin = std::make_shared<nn::Linear>(5, 3);
  const Tensor x = randn({4, 5});
  check_close((*lin)(x), F::linear(x, lin->weight, lin->bias), {}, "Linear module");
  lin->to(DType::BFloat16);
  BOOST_TEST(dtype_name((*lin)(x.to(DType::BFloat16)).dtype()) == "BFloat16");
}

// linear adds its bias inside the product, in the fp32 accumulator, before the 16-bit output's
// one rounding (PyTorch's addmm; on a GPU, cuBLAS's beta). x = [1, 1], w = [1, e], b = e, with e
// half an ulp of 1 in the dtype: the exact result 1 + 2e is representable, while rounding
// x @ w^T = 1 + e first gives the tie 1 (to even), and 1 + e then rounds to 1 again.
BOOST_AUTO_TEST_CASE(linear_adds_the_bias_before_rounding_once) {
  const std::vector<std::pair<DType, double>> half_ulps = {{DType::Float16, std::ldexp(1.0, -11)},
                                                           {DType::BFloat16, std::ldexp(1.0, -8)}};
  for (const auto& [dtype, e] : half_ulps) {
    BOOST_TEST_CONTEXT(dtype_name(dtype)) {
      const Tensor x =
          from_vector(std::vector<double>{1.0, 1.0, 1.0, 1.0, 1.0, 1.0}, {3, 2}, {.dtype = dtype});
      const Tensor w = from_vector(std::vector<double>{1.0, e}, {1, 2}, {.dtype = dtype});
      const Tensor b = from_vector(std::vector<double>{e}, {1}, {.dtype = dtype});
      for (const Tensor& input : {x, x.reshape({1, 3, 2})}) {  // rows, and rows folded from 3-D
        const Tensor y = F::linear(input, w, b);
        BOOST_TEST(y.dtype() == dtype);
        for (double v : y.to(DType::Float64).to_vector<double>()) BOOST_TEST(v == 1.0 + 2.0 * e);
      }
    }
  }
}

// The other paths keep their own semantics: a bias of another dtype is promoted by the add
// after the product (as in PyTorch), a non-contiguous 3-D input multiplies through matmul, and
// an input with no features gives the bias in every row.
BOOST_AUTO_TEST_CASE(linear_with_a_promoted_bias_a_strided_input_or_no_features) {
  const Tensor w = from_vector(std::vector<double>{1.0, 2.0, 3.0, 4.0}, {2, 2});
  const Tensor x =
      from_vector(std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}, {2, 2, 2});
  const Tensor b64 = from_vector(std::vector<double>{0.5, -0.5}, {2}, {.dtype = DType::Float64});
  const Tensor y = F::linear(x.select(0, 0), w, b64);
  BOOST_TEST(y.dtype() == DType::Float64);
  BOOST_TEST(y.to_vector<double>() == std::vector<double>({5.5, 10.5, 11.5, 24.5}),
             boost::test_tools::per_element());
  // x.transpose(0, 1) is not contiguous: [[1, 2], [5, 6]], [[3, 4], [7, 8]].
  const Tensor strided = F::linear(x.transpose(0, 1), w, b64.to(DType::Float32));
  BOOST_TEST(strided.sizes() == Shape({2, 2, 2}), boost::test_tools::per_element());
  BOOST_TEST(strided.to_vector<float>() ==
                 std::vector<float>({5.5f, 10.5f, 17.5f, 38.5f, 11.5f, 24.5f, 23.5f, 52.5f}),
             boost::test_tools::per_element());
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    BOOST_TEST_CONTEXT(dtype_name(dtype)) {
      const Tensor none = F::linear(amp::zeros({3, 0}, {.dtype = dtype}),
                                    amp::zeros({2, 0}, {.dtype = dtype}), b64.to(dtype));
      BOOST_TEST(none.to(DType::Float64).to_vector<double>() ==
                     std::vector<double>({0.5, -0.5, 0.5, -0.5, 0.5, -0.5}),
                 boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(embedding_module_returns_rows_and_accumulates_repeated_indices) {
  manual_seed(0);
  auto emb = std::make_shared<nn::Embedding>(6, 3);
  const Tensor idx = from_vector(std::vector<int64_t>{2, 2, 5}, {3}, {.dtype = DType::Int64});
  const Tensor y = (*emb)(idx);
  BOOST_TEST((y.sizes() == Shape{3, 3}));
  const auto w = emb->weight.to_vector<float>();
  const auto v = y.to_vector<float>();
  for (int j = 0; j < 3; ++j) BOOST_TEST(v[3 + j] == w[6 + j]);
  y.sum().backward();
  const auto g = emb->weight.grad().to_vector<float>();
  BOOST_TEST(g[6] == 2.0f);
  BOOST_TEST(g[15] == 1.0f);
  BOOST_TEST(g[0] == 0.0f);
  BOOST_CHECK_THROW((*emb)(from_vector(std::vector<int64_t>{6}, {1}, {.dtype = DType::Int64})),
                    Error);
  BOOST_CHECK_THROW((*emb)(ones({2})), Error);
}

BOOST_AUTO_TEST_CASE(layer_norm_module_defaults_to_unit_weight_zero_bias_and_keeps_16_bit) {
  auto ln = std::make_shared<nn::LayerNorm>(Shape{4});
  BOOST_TEST(ln->weight.to_vector<float>() == std::vector<float>(4, 1.0f),
             boost::test_tools::per_element());
  BOOST_TEST(ln->bias.to_vector<float>() == std::vector<float>(4, 0.0f),
             boost::test_tools::per_element());
  const Tensor x = randn({3, 4});
  const Tensor y32 = (*ln)(x);
  // fp32 parameters with fp16 input: computed in fp32, returned in fp16.
  const Tensor y16 = (*ln)(x.to(DType::Float16));
  BOOST_TEST(dtype_name(y16.dtype()) == "Float16");
  check_close(y16, y32, {.atol = 1e-2, .rtol = 1e-2}, "LayerNorm fp16 input");
  auto gn = std::make_shared<nn::GroupNorm>(2, 4);
  BOOST_TEST(gn->parameters().size() == 2u);
  BOOST_CHECK_THROW(nn::GroupNorm(3, 4), Error);
}

BOOST_AUTO_TEST_CASE(dropout_scales_kept_elements_and_is_identity_in_eval) {
  auto drop = std::make_shared<nn::Dropout>(0.25);
  const Tensor x = ones({4000});
  manual_seed(7);
  const auto a = (*drop)(x).to_vector<float>();
  manual_seed(7);
  const auto b = (*drop)(x).to_vector<float>();
  BOOST_TEST(a == b, boost::test_tools::per_element());  // seeded through amp::manual_seed
  int zeros_seen = 0;
  for (float v : a) {
    BOOST_TEST((v == 0.0f || std::abs(v - 1.0f / 0.75f) < 1e-6f));
    zeros_seen += v == 0.0f;
  }
  BOOST_TEST(std::abs(zeros_seen / 4000.0 - 0.25) < 0.03);
  drop->eval();
  BOOST_TEST((*drop)(x).is_same(x));
  BOOST_TEST(F::dropout(x, 1.0).sum().item<double>() == 0.0);
  BOOST_CHECK_THROW(nn::Dropout(1.5), Error);
}

BOOST_AUTO_TEST_CASE(activation_modules_match_functional) {
  const Tensor x = randn({2, 5});
  check_close((*std::make_shared<nn::ReLU>())(x), F::relu(x), {}, "ReLU");
  check_close((*std::make_shared<nn::GELU>("tanh"))(x), F::gelu(x, "tanh"), {}, "GELU");
  check_close((*std::make_shared<nn::SiLU>())(x), F::silu(x), {}, "SiLU");
  check_close((*std::make_shared<nn::Tanh>())(x), amp::tanh(x), {}, "Tanh");
  check_close((*std::make_shared<nn::Sigmoid>())(x), amp::sigmoid(x), {}, "Sigmoid");
  BOOST_CHECK_THROW(nn::GELU("fast"), Error);
}

BOOST_AUTO_TEST_CASE(flatten_and_sequential_compose) {
  manual_seed(3);
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(6, 4)});
  seq->push_back(std::make_shared<nn::ReLU>());
  BOOST_TEST(seq->size() == 3u);
  const Tensor x = randn({2, 2, 3});
  auto lin = std::static_pointer_cast<nn::Linear>((*seq)[1]);
  check_close((*seq)(x), F::relu(F::linear(x.reshape({2, 6}), lin->weight, lin->bias)), {},
              "Sequential");
  std::vector<std::string> keys;
  for (const auto& [k, v] : seq->named_parameters()) keys.push_back(k);
  BOOST_TEST(keys == (std::vector<std::string>{"1.weight", "1.bias"}),
             boost::test_tools::per_element());
  nn::ModuleList list{std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(2, 2)};
  BOOST_TEST(list.size() == 2u);
  BOOST_TEST(list.parameters().size() == 2u);
}

BOOST_AUTO_TEST_CASE(init_functions_follow_pytorch_fans) {
  Tensor w = empty({8, 4, 3, 3});
  const auto [fan_in, fan_out] = nn::init::calculate_fan_in_and_fan_out(w);
  BOOST_TEST(fan_in == 36);
  BOOST_TEST(fan_out == 72);
  manual_seed(0);
  nn::init::xavier_uniform_(w);
  const double bound = std::sqrt(6.0 / (36 + 72));
  for (double v : w.to_vector<double>()) BOOST_TEST(std::abs(v) <= bound);
  Tensor big = empty({256, 512});
  nn::init::kaiming_normal_(big, 0.0, "fan_in", "relu");
  const auto v = big.to_vector<double>();
  double sq = 0;
  for (double x : v) sq += x * x;
  BOOST_TEST(std::abs(std::sqrt(sq / v.size()) - std::sqrt(2.0 / 512)) <
             0.01 * std::sqrt(2.0 / 512) * 5);
  nn::init::constant_(big, 0.5);
  BOOST_TEST(big.sum().item<double>() == 0.5 * 256 * 512);
  BOOST_TEST(std::abs(nn::init::calculate_gain("tanh") - 5.0 / 3.0) < 1e-12);
  Tensor vec = empty({3});
  BOOST_CHECK_THROW(nn::init::xavier_normal_(vec), Error);
}

BOOST_AUTO_TEST_CASE(loss_argument_errors_name_the_loss) {
  const Tensor logits = randn({3, 4});
  const auto throws_naming = [](const std::function<void()>& f, const std::string& name) {
    try {
      f();
      BOOST_ERROR("expected amp::Error naming " << name);
    } catch (const Error& e) {
      BOOST_TEST(std::string(e.what()).find(name) != std::string::npos, e.what());
    }
  };
  const Tensor bad_class = from_vector(std::vector<int64_t>{0, 4, 1}, {3}, {.dtype = DType::Int64});
  throws_naming([&] { F::cross_entropy(logits, bad_class); }, "cross_entropy");
  throws_naming([&] { F::nll_loss(logits, ones({3})); }, "nll_loss");
  throws_naming([&] { F::nll_loss(logits, zeros({4}, {.dtype = DType::Int64})); }, "nll_loss");
  throws_naming([&] { F::mse_loss(logits, zeros({4, 3})); }, "mse_loss");
  throws_naming([&] { F::l1_loss(logits, zeros({3})); }, "l1_loss");
  throws_naming(
      [&] {
        F::smooth_l1_loss(logits, zeros({3, 4}), F::Reduction::Mean, -1);
      },
      "smooth_l1_loss");
  throws_naming([&] { F::binary_cross_entropy(logits, zeros({3, 4})); }, "binary_cross_entropy");
  throws_naming([&] { F::binary_cross_entropy_with_logits(logits, zeros({2})); },
                "binary_cross_entropy_with_logits");
  throws_naming([&] { F::kl_div(logits, zeros({1})); }, "kl_div");
  throws_naming([&] { F::mse_loss(logits, logits, F::Reduction::BatchMean); }, "mse_loss");
}

BOOST_AUTO_TEST_CASE(binary_cross_entropy_clamps_log_at_zero_and_one) {
  const Tensor p = from_vector(std::vector<double>{0.0, 1.0}, {2});
  const Tensor t = from_vector(std::vector<double>{1.0, 0.0}, {2});
  const auto loss = F::binary_cross_entropy(p, t, F::Reduction::None).to_vector<double>();
  BOOST_TEST(loss[0] == 100.0);
  BOOST_TEST(loss[1] == 100.0);
}

BOOST_AUTO_TEST_CASE(bce_with_logits_is_finite_for_large_logits) {
  const Tensor x = from_vector(std::vector<double>{-200.0, 200.0}, {2});
  const Tensor t = from_vector(std::vector<double>{1.0, 0.0}, {2});
  const auto loss =
      F::binary_cross_entropy_with_logits(x, t, F::Reduction::None).to_vector<double>();
  BOOST_TEST(std::abs(loss[0] - 200.0) < 1e-3);
  BOOST_TEST(std::abs(loss[1] - 200.0) < 1e-3);
}

BOOST_AUTO_TEST_CASE(cross_entropy_of_fp16_logits_is_fp16_with_an_fp32_accumulated_mean) {
  manual_seed(0);
  const Tensor logits = randn({64, 10});
  std::vector<int64_t> labels(64);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  const Tensor target = from_vector(labels, {64}, {.dtype = DType::Int64});
  const Tensor l32 = F::cross_entropy(logits, target);
  const Tensor l16 = F::cross_entropy(logits.to(DType::Float16), target);
  BOOST_TEST(dtype_name(l16.dtype()) == "Float16");
  BOOST_TEST(std::abs(l16.item<double>() - l32.item<double>()) < 5e-3);
}

BOOST_AUTO_TEST_SUITE_END()
