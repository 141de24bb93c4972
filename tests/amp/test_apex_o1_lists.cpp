// amp::initialize's O1 casts by apex's own lists (apex/amp/lists/functional_overrides.py,
// torch_overrides.py, tensor_overrides.py at e13873de, transcribed below), on every device, while
// amp::autocast regions keep PyTorch's tables (tests/amp/test_autocast.cpp). The expected
// category of each op of the policy table comes from apex's lists by name, not from the table's
// apex column, and every op runs against a control computed with the casts off on manually cast
// inputs.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "amp/amp.h"
#include "csrc/autocast/autocast_state.h"
#include "csrc/autocast/policy.h"
#include "tests/amp/autocast_inputs.h"
#include "tests/amp/autocast_invokers.h"
#include "tests/amp/frontend_test_util.h"
#include "tests/autograd/test_util.h"

namespace {

using amp::DeviceType;
using amp::DType;
using amp::Tensor;
using amp_test::bit_equal;
using amp_test::error_of;
using amp_test::FreshAmpState;
using amp_test::invokers;
using amp_test::probs;
using amp_test::quiet;
using amp_test::signed_values;
using amp_test::then;
using amp_test::to_dtype;
namespace F = amp::nn::functional;

// apex's lists, as apex spells them (torch.nn.functional, torch and torch.Tensor together).
const std::set<std::string> kApexFp16 = {"conv1d",
                                         "conv2d",
                                         "conv3d",
                                         "conv_transpose1d",
                                         "conv_transpose2d",
                                         "conv_transpose3d",
                                         "conv_tbc",
                                         "linear",
                                         "prelu",
                                         "addmm",
                                         "addmv",
                                         "addr",
                                         "matmul",
                                         "mm",
                                         "mv",
                                         "addbmm",
                                         "baddbmm",
                                         "bmm",
                                         "__matmul__"};
const std::set<std::string> kApexFp32 = {
    // torch.nn.functional
    "interpolate", "grid_sample", "softplus", "softmin", "log_softmax", "softmax", "gelu",
    "layer_norm", "group_norm", "local_response_norm", "normalize", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "cross_entropy", "hinge_embedding_loss", "kl_div",
    "l1_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "nll_loss",
    "binary_cross_entropy_with_logits", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
    "ctc_loss",
    // torch
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "reciprocal", "rsqrt",
    "sinh", "tan", "pow", "cumprod", "cumsum", "dist", "norm", "prod", "std", "sum", "var",
    "renorm",
    // torch.Tensor
    "__ipow__", "__pow__", "__rpow__", "cpu"};
const std::set<std::string> kApexCasts = {
    // torch
    "addcdiv", "addcmul", "atan2", "cross", "bilinear", "dot", "add", "div", "mul", "eq", "equal",
    "ge", "gt", "le", "lt", "ne",
    // torch.Tensor
    "__add__", "__div__", "__eq__", "__ge__", "__gt__", "__iadd__", "__idiv__", "__imul__",
    "__isub__", "__itruediv__", "__le__", "__lt__", "__mul__", "__ne__", "__radd__", "__rdiv__",
    "__rmul__", "__rsub__", "__rtruediv__", "__sub__", "__truediv__"};
const std::set<std::string> kApexSequenceCasts = {"cat", "stack"};
const std::set<std::string> kApexBanned = {"binary_cross_entropy"};

constexpr const char* kApexBceMessage =
    "\namp does not work out-of-the-box with `F.binary_cross_entropy` or `torch.nn.BCELoss.` "
    "It requires that the output of the previous function be already a FloatTensor. \n\n"
    "Most models have a Sigmoid right before BCELoss. In that case, you can use\n"
    "    torch.nn.BCEWithLogitsLoss\nto combine Sigmoid+BCELoss into a single layer "
    "that is compatible with amp.\nAnother option is to add\n"
    "    amp.register_float_function(torch, 'sigmoid')\nbefore calling `amp.init()`.\n"
    "If you _really_ know what you are doing, you can disable this warning by passing "
    "allow_banned=True to `amp.init()`.";

enum class ApexList { Fp16, Fp32, Promote, Banned, None };

// apex's name of an ampcpp op: "nn::functional::layer_norm" is layer_norm, "pow(Tensor, double)"
// is pow, and rsub (Tensor's __rsub__) is found under its dunder name.
ApexList apex_list_of(std::string_view op) {
  if (op.starts_with("nn::functional::"))
    op.remove_prefix(std::string_view("nn::functional::").size());
  op = op.substr(0, op.find('('));
  const std::string name(op), dunder = "__" + name + "__";
  const auto in = [&](const std::set<std::string>& list) {
    return list.count(name) == 1 || list.count(dunder) == 1;
  };
  if (in(kApexFp16)) return ApexList::Fp16;
  if (in(kApexFp32)) return ApexList::Fp32;
  if (in(kApexCasts) || in(kApexSequenceCasts)) return ApexList::Promote;
  if (in(kApexBanned)) return ApexList::Banned;
  return ApexList::None;
}

// A model on the CPU, initialised at O1 with `lower` (process-wide casting on for CPU tensors).
std::shared_ptr<amp::nn::Linear> initialize_o1(DType lower) {
  auto model = std::make_shared<amp::nn::Linear>(4, 3);
  amp::Overrides o = quiet();
  o.low_precision_dtype = lower;
  amp::initialize(*model, "O1", o);
  return model;
}

// Every op of the table under O1 with `lower`, inputs in `in`, against a control with the casts
// off and the inputs cast as apex's list of the op says.
void check_every_op_follows_apex(DType lower, DType in) {
  for (const amp::autocast_policy::OpPolicy& entry : amp::autocast_policy::table()) {
    const std::string op(entry.op);
    BOOST_TEST_CONTEXT(op << " O1 " << amp::dtype_name(lower) << " input " << amp::dtype_name(in)) {
      BOOST_TEST_REQUIRE(invokers().count(op) == 1);
      const amp_test::Invoker& call = invokers().at(op);
      const ApexList list = apex_list_of(op);
      if (list == ApexList::Banned && in == lower) {
        BOOST_TEST(error_of([&] { call(to_dtype(in)); }) == kApexBceMessage);
        continue;
      }
      const Tensor out = call(to_dtype(in));
      std::optional<DType> as;
      if (list == ApexList::Fp16) as = lower;
      if (list == ApexList::Fp32) as = DType::Float32;
      Tensor control;
      {
        amp::disable_casts off;
        control = call(as ? then(to_dtype(in), to_dtype(*as)) : to_dtype(in));
      }
      if (as && amp::is_floating_point(out.dtype())) BOOST_TEST(out.dtype() == *as);
      BOOST_TEST(bit_equal(out, control), "got " << amp::dtype_name(out.dtype()) << ", control "
                                                 << amp::dtype_name(control.dtype()));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(apex_o1_lists)

// The ops that issue 29 found on PyTorch's lists instead of apex's: gelu (16-bit on CUDA) and, on
// the CPU, softmax, layer_norm, exp, log, pow and sum (16-bit in CPU autocast).
BOOST_FIXTURE_TEST_CASE(gelu_softmax_layer_norm_exp_log_pow_sum_run_in_fp32_under_o1,
                        FreshAmpState) {
  const Tensor h = signed_values({4, 4}, 1).to(DType::Float16);
  const Tensor p = amp_test::positive({4, 4}, 2).to(DType::Float16);
  auto model = initialize_o1(DType::Float16);
  BOOST_TEST((amp::gelu(h).dtype() == DType::Float32));
  BOOST_TEST((amp::gelu(h, true).dtype() == DType::Float32));
  BOOST_TEST((amp::softmax(h, 1).dtype() == DType::Float32));
  BOOST_TEST((amp::log_softmax(h, 1).dtype() == DType::Float32));
  BOOST_TEST((F::layer_norm(h, {4}).dtype() == DType::Float32));
  BOOST_TEST((amp::exp(h).dtype() == DType::Float32));
  BOOST_TEST((amp::log(p).dtype() == DType::Float32));
  BOOST_TEST((amp::pow(p, 1.5).dtype() == DType::Float32));
  BOOST_TEST((amp::sum(h).dtype() == DType::Float32));
  BOOST_TEST((amp::matmul(h, h).dtype() == DType::Float16));
  BOOST_TEST(((*model)(signed_values({2, 4}, 3)).dtype() == DType::Float16));
  BOOST_TEST((amp::relu(h).dtype() == DType::Float16));  // not listed: its input's dtype
  // The values are those of the op on the input cast to fp32, which fp16 would round.
  const Tensor out = amp::gelu(h);
  amp::disable_casts off;
  const Tensor expected = amp::gelu(h.to(DType::Float32));
  BOOST_TEST(bit_equal(out, expected));
  BOOST_TEST(!bit_equal(amp::gelu(h).to(DType::Float32), expected));
}

BOOST_FIXTURE_TEST_CASE(every_op_follows_apex_lists_under_o1_on_cpu_tensors, FreshAmpState) {
  for (DType lower : {DType::Float16, DType::BFloat16}) {
    initialize_o1(lower);
    for (DType in : {DType::Float32, lower}) check_every_op_follows_apex(lower, in);
  }
}

// apex's lists do not depend on the device: with the CUDA column of PyTorch's table in place of
// the CPU's (what CUDA tensors use under amp::autocast), O1 still follows apex's lists (gelu in
// fp32, scaled_dot_product_attention in its input's dtype, both unlike PyTorch's CUDA table).
BOOST_FIXTURE_TEST_CASE(every_op_follows_apex_lists_under_o1_with_the_cuda_column, FreshAmpState) {
  amp::autocast_policy::ScopedColumnOverride cuda(DeviceType::CPU, DeviceType::CUDA);
  initialize_o1(DType::Float16);
  for (DType in : {DType::Float32, DType::Float16}) check_every_op_follows_apex(DType::Float16, in);
}

// amp::autocast is the torch workflow: a region inside an O1 program follows PyTorch's table.
BOOST_FIXTURE_TEST_CASE(an_autocast_region_under_o1_follows_pytorch_tables, FreshAmpState) {
  const Tensor h = signed_values({4, 4}, 1).to(DType::Float16);
  initialize_o1(DType::Float16);
  BOOST_TEST(amp::autocast_state::uses_apex_lists(DeviceType::CPU));
  {
    amp::autocast region(DeviceType::CPU, DType::Float16);
    BOOST_TEST(!amp::autocast_state::uses_apex_lists(DeviceType::CPU));
    BOOST_TEST((amp::gelu(h).dtype() == DType::Float16));
    BOOST_TEST((amp::exp(h).dtype() == DType::Float16));  // not on CPU autocast's lists
    BOOST_TEST((amp::softmax(h, 1).dtype() == DType::Float16));
    BOOST_TEST(error_of([&] { F::binary_cross_entropy(probs({4}, 1), probs({4}, 2)); }) == "");
  }
  {
    amp::autocast_policy::ScopedColumnOverride cuda(DeviceType::CPU, DeviceType::CUDA);
    amp::autocast region(DeviceType::CPU, DType::Float16);
    BOOST_TEST((amp::gelu(h).dtype() == DType::Float16));  // not on CUDA autocast's lists either
    BOOST_TEST((amp::exp(h).dtype() == DType::Float32));
  }
  BOOST_TEST((amp::gelu(h).dtype() == DType::Float32));  // O1's lists again
}

// Backward keeps the dtypes forward chose: gelu's gradient reaches an fp16 leaf in fp16, computed
// from the fp32 forward.
BOOST_FIXTURE_TEST_CASE(gradients_flow_back_through_apex_casts, FreshAmpState) {
  Tensor x = signed_values({3, 5}, 1).to(DType::Float16);
  x.requires_grad_();
  initialize_o1(DType::Float16);
  amp::sum(amp::gelu(x)).backward();
  BOOST_TEST((x.grad().dtype() == DType::Float16));
  Tensor reference = x.detach().to(DType::Float32);
  reference.requires_grad_();
  {
    amp::disable_casts off;
    amp::sum(amp::gelu(reference)).backward();
  }
  BOOST_TEST(bit_equal(x.grad(), reference.grad().to(DType::Float16)));
}

// apex raises for binary_cross_entropy only when an argument is 16-bit (err_if_any_half);
// sigmoid (not listed) keeps a 16-bit linear output 16-bit, so the usual model hits it.
BOOST_FIXTURE_TEST_CASE(binary_cross_entropy_raises_apex_message_only_on_16_bit_inputs,
                        FreshAmpState) {
  const Tensor p = probs({8}, 1), t = probs({8}, 2);
  auto model = initialize_o1(DType::Float16);
  const Tensor fp32 = F::binary_cross_entropy(p, t);
  BOOST_TEST((fp32.dtype() == DType::Float32));
  {
    amp::disable_casts off;
    BOOST_TEST(bit_equal(fp32, F::binary_cross_entropy(p, t)));
  }
  BOOST_TEST(error_of([&] { F::binary_cross_entropy(p.to(DType::Float16), t); }) ==
             kApexBceMessage);
  const Tensor out = amp::sigmoid((*model)(signed_values({2, 4}, 3)));
  BOOST_TEST((out.dtype() == DType::Float16));
  BOOST_TEST(error_of([&] { F::binary_cross_entropy(out, probs({2, 3}, 4)); }) == kApexBceMessage);
  BOOST_TEST(
      (F::binary_cross_entropy_with_logits((*model)(signed_values({2, 4}, 3)), probs({2, 3}, 4))
           .dtype() == DType::Float32));
}

// apex casts {Half, Float} to Float for its promote lists. Type promotion gives the same for the
// elementwise ops; other mixes run in the widest dtype where apex raises NotImplementedError
// ("Do not know how to handle these types to promote"), a documented difference.
BOOST_FIXTURE_TEST_CASE(promote_lists_run_a_half_float_mix_in_float, FreshAmpState) {
  const Tensor h = signed_values({2, 3}, 1).to(DType::Float16), f = signed_values({2, 3}, 2);
  const Tensor d = f.to(DType::Float64);
  initialize_o1(DType::Float16);
  const Tensor hf = h.to(DType::Float32);
  for (const auto& [name, out, expected] : std::vector<std::tuple<std::string, Tensor, Tensor>>{
           {"cat", amp::cat({h, f}, 0), amp::cat({hf, f}, 0)},
           {"stack", amp::stack({h, f}, 0), amp::stack({hf, f}, 0)},
           {"add", amp::add(h, f), amp::add(hf, f)},
           {"mul", amp::mul(h, f), amp::mul(hf, f)},
           {"div", amp::div(h, f), amp::div(hf, f)},
           {"sub", amp::sub(h, f), amp::sub(hf, f)}}) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST((out.dtype() == DType::Float32));
      BOOST_TEST(bit_equal(out, expected));
    }
  }
  BOOST_TEST((amp::cat({h, h}, 0).dtype() == DType::Float16));  // one type: as is
  BOOST_TEST((amp::eq(h, f).dtype() == DType::Bool));
  BOOST_TEST((amp::add(d, f).dtype() == DType::Float64));
  BOOST_TEST((amp::cat({d, f}, 0).dtype() == DType::Float64));
}

BOOST_AUTO_TEST_SUITE_END()
