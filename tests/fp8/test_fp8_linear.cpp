// fp8 GEMMs in training (csrc/ops/fp8_linear.h, amp/fp8.h): nn::Linear under each recipe against
// float64 math on the quantized values, the delayed scales' once-per-step update worked out by
// hand (torch workflow at the fp8 autocast exit, apex workflow at scale_loss's exit, skipped
// steps), the scale buffers' state_dict round trip resuming bit for bit; and (suite
// fp8_training, label e2e) a short MLP training run with delayed fp8 against bf16.
//
// The references quantize with the scalar types (csrc/core/float8.h, tested against the OCP
// golden file) and compute scales and E8M0 exponents from the formulas written out here, then
// multiply in float64. The library's GEMM rounds its fp32 accumulation to bf16 once and then
// multiplies by the scale_invs in fp32 (docs/fp8.md), so the products match the reference to a
// relative 2^-8 plus the fp32 accumulation's error.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "amp/amp.h"
#include "amp/amp_state.h"
#include "csrc/core/float8.h"
#include "csrc/ops/fp8_linear.h"
#include "tests/amp/frontend_test_util.h"
#include "tests/support/cuda_precondition.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;
using amp::fp8::CurrentScaling;
using amp::fp8::DelayedScaling;
using amp::fp8::Format;
using amp::fp8::MXBlockScaling;

// Row-major matrix of doubles.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double at(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
};

Mat to_mat(const Tensor& t) {
  Mat m{t.size(0), t.size(1), {}};
  for (float f : t.to(DType::Float32).to_vector<float>()) m.v.push_back(f);
  return m;
}

double amax_of(const Mat& m) {
  double a = 0;
  for (double x : m.v) a = std::max(a, std::fabs(x));
  return a;
}

// Per-tensor quantization written out: fp8_saturated(fp32(x * scale)).
Mat quantize(const Mat& m, float scale, bool e5m2) {
  Mat q = m;
  for (double& x : q.v) {
    const float p = static_cast<float>(x) * scale;
    x = e5m2 ? float(amp::Float8_e5m2::saturated(p)) : float(amp::Float8_e4m3fn::saturated(p));
  }
  return q;
}

// MX by the OCP rule along each row of m, in blocks of `block` (the last one shorter when the
// row is not a multiple): X = 2^(floor(log2(amax)) - emax), emax 8 (E4M3) or 15
// (E5M2); elements saturated(v / X) * X.
Mat mx_rows(const Mat& m, int block, bool e5m2) {
  Mat q = m;
  const int emax = e5m2 ? 15 : 8;
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c0 = 0; c0 < m.cols; c0 += block) {
      const int64_t end = std::min<int64_t>(c0 + block, m.cols);  // a shorter last block
      double a = 0;
      for (int64_t c = c0; c < end; ++c) a = std::max(a, std::fabs(m.at(r, c)));
      const double x =
          a == 0 ? std::ldexp(1.0, -127) : std::ldexp(1.0, int(std::floor(std::log2(a))) - emax);
      for (int64_t c = c0; c < end; ++c) {
        const float p = static_cast<float>(m.at(r, c) / x);
        const double e =
            e5m2 ? float(amp::Float8_e5m2::saturated(p)) : float(amp::Float8_e4m3fn::saturated(p));
        q.v[static_cast<size_t>(r * m.cols + c)] = e * x;
      }
    }
  }
  return q;
}

Mat transpose(const Mat& m) {
  Mat t{m.cols, m.rows, std::vector<double>(m.v.size())};
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) t.v[static_cast<size_t>(c * m.rows + r)] = m.at(r, c);
  }
  return t;
}

// a @ b^T * factor; the same with |a| |b| (the accumulation error's scale); and |a @ b^T *
// factor| (the bf16 rounding's scale, which a bias added afterwards does not change).
struct Product {
  Mat value, magnitude, rounded;
};
Product mm_t(const Mat& a, const Mat& b, double factor) {
  Product p{{a.rows, b.rows, {}}, {a.rows, b.rows, {}}, {a.rows, b.rows, {}}};
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < b.rows; ++j) {
      double s = 0, m = 0;
      for (int64_t k = 0; k < a.cols; ++k) {
        s += a.at(i, k) * b.at(j, k);
        m += std::fabs(a.at(i, k) * b.at(j, k));
      }
      p.value.v.push_back(s * factor);
      p.magnitude.v.push_back(m * std::fabs(factor));
      p.rounded.v.push_back(std::fabs(s * factor));
    }
  }
  return p;
}

// |got - want| <= 2^-8 |product| + 2^-20 * (sum of |terms|): one bf16 rounding of the fp32 sum,
// one fp32 rounding of the scaled value, and fp32 accumulation.
void check_product(const Tensor& got_t, const Product& want, const char* what) {
  const Mat got = to_mat(got_t);
  BOOST_REQUIRE_EQUAL(got.rows, want.value.rows);
  BOOST_REQUIRE_EQUAL(got.cols, want.value.cols);
  int bad = 0;
  for (size_t i = 0; i < got.v.size(); ++i) {
    const double tol = std::ldexp(want.rounded.v[i], -8) + std::ldexp(want.magnitude.v[i], -20);
    if (!(std::fabs(got.v[i] - want.value.v[i]) <= tol) && bad++ < 3) {
      BOOST_ERROR(what << "[" << i << "] = " << got.v[i] << ", want " << want.value.v[i]
                       << " (tolerance " << tol << ")");
    }
  }
  BOOST_CHECK_EQUAL(bad, 0);
}

// The scale current scaling gives (TE's compute_scale_from_amax) written out in fp32.
float current(double amax, float max) { return max / static_cast<float>(amax); }

Tensor leaf(const Tensor& t) {
  Tensor out = t.detach().clone();
  out.requires_grad_(true);
  return out;
}

// Keeps the apex recipe and the staged amaxes of other cases out of each case.
struct FreshFp8 {
  FreshFp8() { reset(); }
  ~FreshFp8() { reset(); }
  static void reset() {
    amp_test::reset_amp_state();
    amp::fp8::set_initialize_recipe(std::nullopt);
    amp::fp8::drop_pending();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(fp8_linear)

// Current scaling, HYBRID: x and w in E4M3 with 448 / amax, dy in E5M2 with 57344 / amax; y, dx
// and dw against float64 products of the quantized values times the scale_invs.
BOOST_FIXTURE_TEST_CASE(current_scaling_forward_and_backward_match_float64, FreshFp8) {
  amp::manual_seed(7);
  auto lin = std::make_shared<amp::nn::Linear>(24, 20, /*bias=*/false);
  const Tensor x = leaf(amp::randn({16, 24}) * 3.0);
  const Tensor dy = amp::randn({16, 20}) * 0.01;
  Tensor y;
  {
    amp::fp8::autocast fp8(CurrentScaling{});
    y = (*lin)(x);
  }
  y.backward(dy);
  const Mat mx = to_mat(x), mw = to_mat(lin->weight), mdy = to_mat(dy);
  const float sx = current(amax_of(mx), 448), sw = current(amax_of(mw), 448),
              sdy = current(amax_of(mdy), 57344);
  const Mat qx = quantize(mx, sx, false), qw = quantize(mw, sw, false),
            qdy = quantize(mdy, sdy, true);
  const double ix = 1.0f / sx, iw = 1.0f / sw, idy = 1.0f / sdy;
  check_product(y, mm_t(qx, qw, ix * iw), "y");
  check_product(x.grad(), mm_t(qdy, transpose(qw), idy * iw), "dx");
  check_product(lin->weight.grad(), mm_t(transpose(qdy), transpose(qx), idy * ix), "dw");
  BOOST_CHECK(y.dtype() == DType::Float32);
}

// Power-of-two scales and Format::E4M3 (gradients in E4M3 too), with a bias and a 3-D input.
BOOST_FIXTURE_TEST_CASE(power_of_two_e4m3_with_bias_and_3d_input, FreshFp8) {
  amp::manual_seed(8);
  auto lin = std::make_shared<amp::nn::Linear>(8, 6);
  const Tensor x = leaf(amp::randn({2, 5, 8}));
  Tensor y;
  {
    amp::fp8::autocast fp8(CurrentScaling{.format = Format::E4M3, .power_of_two_scales = true});
    y = (*lin)(x);
  }
  BOOST_REQUIRE(y.sizes() == amp::Shape({2, 5, 6}));
  const Mat mx = to_mat(x.reshape({10, 8})), mw = to_mat(lin->weight);
  // The largest power of two not above 448 / amax.
  const auto pow2 = [](double amax) {
    return static_cast<float>(std::ldexp(1.0, int(std::floor(std::log2(448.0f / float(amax))))));
  };
  const float sx = pow2(amax_of(mx)), sw = pow2(amax_of(mw));
  Product want = mm_t(quantize(mx, sx, false), quantize(mw, sw, false), (1.0 / sx) * (1.0 / sw));
  const std::vector<float> b = lin->bias.to_vector<float>();
  for (size_t i = 0; i < want.value.v.size(); ++i) want.value.v[i] += b[i % 6];
  check_product(y.reshape({10, 6}), want, "y");
}

// MX (OCP exponents, E4M3): forward blocks along in_features; backward requantizes w and x
// column-wise (blocks along out_features and along the batch rows).
BOOST_FIXTURE_TEST_CASE(mx_block_scaling_forward_and_backward_match_float64, FreshFp8) {
  amp::manual_seed(9);
  auto lin = std::make_shared<amp::nn::Linear>(64, 32, false);
  const Tensor x = leaf(amp::randn({32, 64}) * 5.0);
  const Tensor dy = amp::randn({32, 32});
  Tensor y;
  {
    amp::fp8::autocast fp8(MXBlockScaling{});
    y = (*lin)(x);
  }
  y.backward(dy);
  const Mat mx = to_mat(x), mw = to_mat(lin->weight), mdy = to_mat(dy);
  check_product(y, mm_t(mx_rows(mx, 32, false), mx_rows(mw, 32, false), 1.0), "y");
  check_product(x.grad(), mm_t(mx_rows(mdy, 32, false), mx_rows(transpose(mw), 32, false), 1.0),
                "dx");
  check_product(lin->weight.grad(),
                mm_t(mx_rows(transpose(mdy), 32, false), mx_rows(transpose(mx), 32, false), 1.0),
                "dw");
}

// Dims that are not multiples of 32 end in a shorter block (in_features 40: blocks of 32 and 8;
// 20 batch rows for the weight gradient: one block of 20), and HYBRID's gradients are E5M2.
BOOST_FIXTURE_TEST_CASE(mx_shorter_last_block_and_hybrid_gradients, FreshFp8) {
  amp::manual_seed(10);
  auto lin = std::make_shared<amp::nn::Linear>(40, 8, false);
  const Tensor x = leaf(amp::randn({20, 40}));
  const Tensor dy = amp::randn({20, 8}) * 1e-3;
  Tensor y;
  {
    amp::fp8::autocast fp8(MXBlockScaling{.format = Format::HYBRID});
    y = (*lin)(x);
  }
  y.backward(dy);
  const Mat mx = to_mat(x), mw = to_mat(lin->weight), mdy = to_mat(dy);
  check_product(y, mm_t(mx_rows(mx, 32, false), mx_rows(mw, 32, false), 1.0), "y");
  check_product(lin->weight.grad(),
                mm_t(mx_rows(transpose(mdy), 32, true), mx_rows(transpose(mx), 32, false), 1.0),
                "dw");
}

// Delayed scaling, history length 2, "max": worked step by step. Inputs are chosen so that every
// amax is exact: x's 2.0 then 4.0, w's 0.5, dy's 8.0.
BOOST_FIXTURE_TEST_CASE(delayed_scaling_updates_once_per_step_at_the_autocast_exit, FreshFp8) {
  auto lin = std::make_shared<amp::nn::Linear>(2, 2, false);
  {
    amp::NoGradGuard no_grad;
    lin->weight.copy_(amp::from_vector<float>({0.5f, -0.25f, 0.125f, 0.5f}, {2, 2}));
  }
  const DelayedScaling recipe{.amax_history_len = 2};
  const auto run = [&](float xmax) {
    const Tensor x = leaf(amp::from_vector<float>({xmax, 1.0f, -0.5f, 0.25f}, {2, 2}));
    Tensor y;
    {
      amp::fp8::autocast fp8(recipe);
      y = (*lin)(x);
    }
    return y;
  };
  const auto buffer = [&](const char* name) {
    return lin->state_dict().at(name).to_vector<float>();
  };
  // Step 1: scales 1 (start); the exit enters x's 2 and w's 0.5: scale 448 / 2 = 224 and
  // 448 / 0.5 = 896; dy's slot saw nothing yet and keeps 1.
  Tensor y = run(2.0f);
  const Mat w = to_mat(lin->weight);
  // Scale 1: every value here is an E4M3 value, so y is the exact product.
  check_product(y,
                mm_t(to_mat(amp::from_vector<float>({2.0f, 1.0f, -0.5f, 0.25f}, {2, 2})), w, 1.0),
                "step 1 y");
  BOOST_CHECK(buffer("fp8_scale") == std::vector<float>({224.0f, 896.0f, 1.0f}));
  BOOST_CHECK(buffer("fp8_amax_history") ==
              std::vector<float>({0, 0, 0, /* newest */ 2.0f, 0.5f, 0}));
  // Backward of step 1 stages dy's 8: entered at step 2's exit (57344 / 8 = 7168).
  y.backward(amp::from_vector<float>({8.0f, 1.0f, 1.0f, 1.0f}, {2, 2}));
  y = run(4.0f);
  // Step 2 quantized with step 1's scales: x * 224 (4 * 224 = 896 saturates to 448), w * 896.
  const Mat x2 = to_mat(amp::from_vector<float>({4.0f, 1.0f, -0.5f, 0.25f}, {2, 2}));
  check_product(y, mm_t(quantize(x2, 224.0f, false), quantize(w, 896.0f, false), (1.0 / 224) / 896),
                "step 2 y");
  // x: window {2, 4}: 448 / 4 = 112; w: 896; dy: 7168.
  BOOST_CHECK(buffer("fp8_scale") == std::vector<float>({112.0f, 896.0f, 7168.0f}));
  BOOST_CHECK(buffer("fp8_scale_inv") ==
              std::vector<float>({1.0f / 112.0f, 1.0f / 896.0f, 1.0f / 7168.0f}));
  // Step 3: x's amax 1 (the 1.0 entry); "max" still sees the 4 of step 2: 112 stays.
  y = run(0.5f);
  BOOST_CHECK_EQUAL(buffer("fp8_scale")[0], 112.0f);
  // Step 4: the 4 has left the window {1, 1}: 448.
  y = run(0.5f);
  BOOST_CHECK_EQUAL(buffer("fp8_scale")[0], 448.0f);
  // Nested regions update once, at the outermost exit.
  {
    amp::fp8::autocast outer(recipe);
    {
      amp::fp8::autocast inner(recipe);
      y = (*lin)(amp::from_vector<float>({16.0f, 0, 0, 0}, {2, 2}));
    }
    BOOST_CHECK_EQUAL(buffer("fp8_scale")[0], 448.0f);
  }
  BOOST_CHECK_EQUAL(buffer("fp8_scale")[0], 28.0f);  // 448 / 16
}

// "most_recent" and a margin of 1: scale = 448 / amax / 2.
BOOST_FIXTURE_TEST_CASE(delayed_most_recent_with_margin, FreshFp8) {
  auto lin = std::make_shared<amp::nn::Linear>(2, 1, false);
  const DelayedScaling recipe{
      .margin = 1, .amax_history_len = 4, .amax_compute_algo = "most_recent"};
  for (float xmax : {4.0f, 2.0f}) {
    amp::fp8::autocast fp8(recipe);
    (*lin)(amp::from_vector<float>({xmax, 0.0f}, {1, 2}));
  }
  BOOST_CHECK_EQUAL(lin->state_dict().at("fp8_scale").to_vector<float>()[0], 112.0f);  // 448/2/2
}

// A step whose amaxes include inf or NaN (the loss scaler skips it) enters no history: the
// scales and histories stay, for every module of the step.
BOOST_FIXTURE_TEST_CASE(overflowed_step_does_not_enter_the_history, FreshFp8) {
  auto a = std::make_shared<amp::nn::Linear>(2, 2, false);
  auto b = std::make_shared<amp::nn::Linear>(2, 2, false);
  const DelayedScaling recipe{.amax_history_len = 3};
  const auto step = [&](float first) {
    amp::fp8::autocast fp8(recipe);
    (*b)((*a)(amp::from_vector<float>({first, 1.0f, 1.0f, 1.0f}, {2, 2})));
  };
  step(2.0f);
  const amp::StateDict before_a = a->state_dict(), before_b = b->state_dict();
  const std::vector<float> scale_a = before_a.at("fp8_scale").to_vector<float>();
  const std::vector<float> hist_a = before_a.at("fp8_amax_history").to_vector<float>();
  const std::vector<float> scale_b = before_b.at("fp8_scale").to_vector<float>();
  step(std::numeric_limits<float>::infinity());
  BOOST_CHECK(a->state_dict().at("fp8_scale").to_vector<float>() == scale_a);
  BOOST_CHECK(a->state_dict().at("fp8_amax_history").to_vector<float>() == hist_a);
  BOOST_CHECK(b->state_dict().at("fp8_scale").to_vector<float>() == scale_b);
  step(std::numeric_limits<float>::quiet_NaN());
  BOOST_CHECK(a->state_dict().at("fp8_amax_history").to_vector<float>() == hist_a);
  // And an explicit skip drops finite amaxes too.
  {
    amp::fp8::push_autocast(recipe);
    (*a)(amp::from_vector<float>({64.0f, 1.0f, 1.0f, 1.0f}, {2, 2}));
    amp::fp8::pop_autocast();
  }
  BOOST_CHECK_EQUAL(amp::fp8::update_pending(/*step_skipped=*/true), 0);
  BOOST_CHECK(a->state_dict().at("fp8_amax_history").to_vector<float>() == hist_a);
}

// apex workflow: Overrides::fp8; the update happens at scale_loss's exit, and an overflowed step
// (here through another parameter, so that the fp8 linear's own amaxes stay finite) is dropped.
BOOST_FIXTURE_TEST_CASE(apex_workflow_updates_at_scale_loss_exit_and_skips_overflow, FreshFp8) {
  auto lin = std::make_shared<amp::nn::Linear>(2, 2, false);
  Tensor p = amp::ones({1});
  p.requires_grad_(true);
  std::vector<Tensor> params = lin->parameters();
  params.push_back(p);
  amp::optimizers::SGD sgd(params, {.lr = 0.0});
  amp::initialize(
      *lin, sgd, "O0",
      amp_test::quiet({.loss_scale = "dynamic", .fp8 = DelayedScaling{.amax_history_len = 2}}));
  const auto step = [&](float xmax, double p_factor) {
    sgd.zero_grad();
    const Tensor y = (*lin)(amp::from_vector<float>({xmax, 1.0f, 1.0f, 1.0f}, {2, 2}));
    const Tensor loss = y.sum() + p.sum() * p_factor;
    auto scaled = amp::scale_loss(loss, sgd);
    scaled.backward();
  };
  // The forward alone updates nothing; scale_loss's exit enters x's 2: 224.
  step(2.0f, 1.0);
  std::vector<float> scale = lin->state_dict().at("fp8_scale").to_vector<float>();
  BOOST_CHECK_EQUAL(scale[0], 224.0f);
  // dy = 65536 (the loss scale) everywhere: 57344 / 65536 = 0.875.
  BOOST_CHECK_EQUAL(scale[2], 0.875f);
  const std::vector<float> history = lin->state_dict().at("fp8_amax_history").to_vector<float>();
  // p's gradient 3e38 * 65536 overflows: the step is skipped and enters no history.
  step(4.0f, 3e38);
  BOOST_CHECK(lin->state_dict().at("fp8_amax_history").to_vector<float>() == history);
  BOOST_CHECK_EQUAL(lin->state_dict().at("fp8_scale").to_vector<float>()[0], 224.0f);
  // The next good step enters its 4: 112.
  step(4.0f, 1.0);
  BOOST_CHECK_EQUAL(lin->state_dict().at("fp8_scale").to_vector<float>()[0], 112.0f);
}

// The scale buffers are in state_dict; a fresh model prepared for the recipe loads them and the
// next step gives the same bits as the original's.
BOOST_FIXTURE_TEST_CASE(state_dict_round_trip_resumes_bit_exactly, FreshFp8) {
  amp::manual_seed(11);
  const DelayedScaling recipe{.amax_history_len = 4};
  auto make = [] {
    auto m = std::make_shared<amp::nn::Sequential>();
    m->push_back(std::make_shared<amp::nn::Linear>(8, 16));
    m->push_back(std::make_shared<amp::nn::ReLU>());
    m->push_back(std::make_shared<amp::nn::Linear>(16, 4));
    return m;
  };
  auto model = make();
  amp::optimizers::SGD sgd(model->parameters(), {.lr = 0.05});
  const auto step = [&](amp::nn::Module& m, amp::optimizers::Optimizer& opt, int i) {
    amp::manual_seed(100 + i);
    const Tensor x = amp::randn({8, 8});
    opt.zero_grad();
    Tensor loss;
    {
      amp::fp8::autocast fp8(recipe);
      loss = amp::square(m(x)).mean();
    }
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < 5; ++i) step(*model, sgd, i);
  const amp::StateDict saved = model->state_dict();
  BOOST_REQUIRE(saved.count("0.fp8_amax_history") == 1 && saved.count("2.fp8_scale_inv") == 1);
  std::map<std::string, Tensor> copy;
  for (const auto& [k, v] : saved) copy[k] = v.clone();

  auto resumed = make();
  amp::fp8::prepare(*resumed, recipe);
  resumed->load_state_dict(amp::StateDict(copy.begin(), copy.end()));
  amp::optimizers::SGD sgd2(resumed->parameters(), {.lr = 0.05});
  for (int i = 5; i < 8; ++i) {
    step(*model, sgd, i);
    step(*resumed, sgd2, i);
  }
  // The backward's amaxes of the last step are staged; one more exit enters them in both.
  const amp::StateDict a = model->state_dict(), b = resumed->state_dict();
  for (const auto& [k, v] : a) {
    BOOST_TEST_CONTEXT(k) {
      BOOST_CHECK(v.to(DType::Float32).to_vector<float>() ==
                  b.at(k).to(DType::Float32).to_vector<float>());
    }
  }
  // A prepared buffer of another history length is refused.
  auto other = make();
  amp::fp8::prepare(*other, recipe);
  BOOST_CHECK_EXCEPTION(
      amp::fp8::prepare(*other, DelayedScaling{.amax_history_len = 8}), amp::Error,
      amp_test::has({"Linear.prepare_fp8", "amax_history_len = 4", "got a recipe with 8"}));
}

BOOST_AUTO_TEST_SUITE_END()

// Training (label e2e: about a second).
BOOST_AUTO_TEST_SUITE(fp8_training)

// A 3-layer MLP (32-128-128-4) learning a random linear teacher's argmax, 4 epochs of 3000
// samples at batch 100 (SGD, momentum 0.9) inside bf16 autocast, with and without delayed fp8
// (HYBRID, history 16): the held-out accuracy with fp8 within 2 points of bf16's, which itself
// must have learned (> 85%). Same initial weights, data and order in both runs.
BOOST_FIXTURE_TEST_CASE(mlp_with_delayed_fp8_trains_as_bf16, FreshFp8) {
  const int64_t n_train = 3000, n_test = 1000, in = 32, classes = 4, batch = 100;
  amp::manual_seed(21);
  const Tensor teacher = amp::randn({in, classes});
  const Tensor x_all = amp::randn({n_train + n_test, in});
  const Tensor labels = amp::argmax(amp::matmul(x_all, teacher), 1);
  const auto train = [&](bool fp8) {
    amp::manual_seed(22);
    auto model = std::make_shared<amp::nn::Sequential>();
    model->push_back(std::make_shared<amp::nn::Linear>(in, 128));
    model->push_back(std::make_shared<amp::nn::ReLU>());
    model->push_back(std::make_shared<amp::nn::Linear>(128, 128));
    model->push_back(std::make_shared<amp::nn::ReLU>());
    model->push_back(std::make_shared<amp::nn::Linear>(128, classes));
    amp::optimizers::SGD sgd(model->parameters(), {.lr = 0.05, .momentum = 0.9});
    for (int epoch = 0; epoch < 4; ++epoch) {
      for (int64_t start = 0; start < n_train; start += batch) {
        sgd.zero_grad();
        Tensor loss;
        {
          amp::autocast bf16(amp::DeviceType::CPU, DType::BFloat16);
          amp::fp8::autocast region(DelayedScaling{.amax_history_len = 16}, fp8);
          loss = amp::nn::functional::cross_entropy((*model)(x_all.narrow(0, start, batch)),
                                                    labels.narrow(0, start, batch));
        }
        loss.backward();
        sgd.step();
      }
    }
    amp::NoGradGuard no_grad;
    Tensor logits;
    {
      amp::autocast bf16(amp::DeviceType::CPU, DType::BFloat16);
      amp::fp8::autocast region(DelayedScaling{.amax_history_len = 16}, fp8);
      logits = (*model)(x_all.narrow(0, n_train, n_test));
    }
    const std::vector<int64_t> got = amp::argmax(logits.to(DType::Float32), 1).to_vector<int64_t>();
    const std::vector<int64_t> want = labels.narrow(0, n_train, n_test).to_vector<int64_t>();
    int64_t correct = 0;
    for (size_t i = 0; i < got.size(); ++i) correct += got[i] == want[i];
    return static_cast<double>(correct) / static_cast<double>(n_test);
  };
  const double bf16 = train(false), fp8 = train(true);
  BOOST_TEST_MESSAGE("held-out accuracy: bf16 " << bf16 << ", delayed fp8 " << fp8);
  BOOST_TEST(bf16 > 0.85);
  BOOST_TEST(std::fabs(fp8 - bf16) <= 0.02);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// |gpu - cpu| <= 2^-7 |cpu| + 2^-10 max |cpu|: the two bf16 GEMMs may sum in different orders.
void check_devices_agree(const Tensor& gpu, const Tensor& cpu, const char* what) {
  const std::vector<float> g = gpu.to(amp::Device::cpu()).to(DType::Float32).to_vector<float>();
  const std::vector<float> c = cpu.to(DType::Float32).to_vector<float>();
  BOOST_REQUIRE_EQUAL(g.size(), c.size());
  float largest = 0;
  for (float v : c) largest = std::max(largest, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const float tol = std::ldexp(std::fabs(c[i]), -7) + std::ldexp(largest, -10);
    if (!(std::fabs(g[i] - c[i]) <= tol) && bad++ < 3) {
      BOOST_ERROR(what << "[" << i << "]: CUDA " << g[i] << ", CPU " << c[i]);
    }
  }
  BOOST_CHECK_EQUAL(bad, 0);
}

}  // namespace

// The CUDA path (the quantize kernel and the bf16 GEMM through the kernel tables) against the
// CPU's on the same inputs, for each recipe; delayed scaling's buffers agree bit for bit (the
// amaxes are exact and the update runs on the host).
BOOST_AUTO_TEST_SUITE(gpu_fp8_linear, *amp::testing::requires_cuda())

BOOST_FIXTURE_TEST_CASE(cuda_fp8_linear_matches_cpu, FreshFp8) {
  const std::vector<amp::fp8::Recipe> recipes = {DelayedScaling{.amax_history_len = 4},
                                                 CurrentScaling{}, MXBlockScaling{}};
  for (const amp::fp8::Recipe& recipe : recipes) {
    amp::manual_seed(31);
    auto cpu = std::make_shared<amp::nn::Linear>(64, 32);
    auto gpu = std::make_shared<amp::nn::Linear>(64, 32);
    gpu->load_state_dict(cpu->state_dict());
    gpu->to(amp::Device::cuda());
    const Tensor x = amp::randn({48, 64}) * 2.0, dy = amp::randn({48, 32});
    const Tensor xc = leaf(x), xg = leaf(x.to(amp::Device::cuda()));
    for (int step = 0; step < 2; ++step) {
      Tensor yc, yg;
      {
        amp::fp8::autocast fp8(recipe);
        yc = (*cpu)(xc);
      }
      {
        amp::fp8::autocast fp8(recipe);
        yg = (*gpu)(xg);
      }
      yc.backward(dy);
      yg.backward(dy.to(amp::Device::cuda()));
      check_devices_agree(yg, yc, "y");
    }
    check_devices_agree(xg.grad(), xc.grad(), "dx");
    check_devices_agree(gpu->weight.grad(), cpu->weight.grad(), "dw");
    for (const auto& [k, v] : cpu->state_dict()) {
      if (k.rfind("fp8_", 0) != 0) continue;
      BOOST_TEST_CONTEXT(k) {
        BOOST_CHECK(v.to_vector<float>() ==
                    gpu->state_dict().at(k).to(amp::Device::cpu()).to_vector<float>());
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
