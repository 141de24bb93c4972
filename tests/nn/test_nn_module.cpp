// nn::Module: registration order and names, recursion, train/eval, casting in place, zero_grad,
// forward hooks, state_dict round trips and load_state_dict errors.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "nn/activation.h"
#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "tests/support/message_has.h"

using namespace amp;

namespace {

// A two-layer model with a buffer, a nested Sequential and an integer buffer.
struct Net : nn::Module {
  Net() : Module("Net") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 3));
    steps = register_buffer("steps", zeros({}, {.dtype = DType::Int64}));
    head = register_module(
        "head", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                    std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(3, 2, false)}));
    scale = register_buffer("scale", ones({2}));
  }
  Tensor forward(const Tensor& x) override { return (*head)((*fc1)(x)) * scale; }
  std::shared_ptr<nn::Linear> fc1;
  std::shared_ptr<nn::Sequential> head;
  Tensor steps, scale;
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [name, t] : named) out.push_back(name);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(nn_module)

// Found by tests/fuzz/fuzz_load_state_dict: values were converted while copied, so a NaN for the
// Int64 num_batches_tracked raised after the weights before it had been overwritten.
BOOST_AUTO_TEST_CASE(load_state_dict_whose_conversion_fails_changes_nothing) {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::BatchNorm1d>(2)});
  StateDict before;
  for (const auto& [k, v] : model->state_dict()) before[k] = v.clone();
  StateDict sd;
  for (const auto& [k, v] : before) sd[k] = zeros_like(v).to(DType::Float32);
  sd["1.num_batches_tracked"] = scalar_tensor(std::nan(""));
  BOOST_CHECK_THROW(model->load_state_dict(sd), Error);
  for (const auto& [k, v] : model->state_dict()) {
    BOOST_TEST(
        max(abs(sub(v.to(DType::Float64), before.at(k).to(DType::Float64)))).item<double>() == 0.0,
        k);
  }
}

BOOST_AUTO_TEST_CASE(parameters_are_named_in_registration_order_with_dotted_paths) {
  auto net = std::make_shared<Net>();
  const std::vector<std::string> expected{"fc1.weight", "fc1.bias", "head.1.weight"};
  const auto names = names_of(net->named_parameters());
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  BOOST_TEST(net->parameters().size() == 3u);
  BOOST_TEST(net->parameters(false).empty());
  BOOST_TEST(net->fc1->parameters(false).size() == 2u);
  BOOST_TEST(net->parameters()[0].is_same(net->fc1->weight));
}

BOOST_AUTO_TEST_CASE(buffers_and_modules_are_traversed_recursively) {
  auto net = std::make_shared<Net>();
  const std::vector<std::string> buffers{"steps", "scale"};
  const auto names = names_of(net->named_buffers());
  BOOST_TEST(names == buffers, boost::test_tools::per_element());
  std::vector<std::string> module_names;
  for (auto& [name, m] : net->named_modules()) module_names.push_back(name + ":" + m->name());
  const std::vector<std::string> expected{":Net", "fc1:Linear", "head:Sequential", "head.0:ReLU",
                                          "head.1:Linear"};
  BOOST_TEST(module_names == expected, boost::test_tools::per_element());
  BOOST_TEST(net->modules().size() == 5u);
  BOOST_TEST(net->modules()[0].get() == net.get());
  BOOST_TEST(net->children().size() == 2u);
}

BOOST_AUTO_TEST_CASE(state_dict_keys_follow_pytorch_naming) {
  auto net = std::make_shared<Net>();
  const StateDict sd = net->state_dict();
  std::vector<std::string> keys;
  for (const auto& [k, v] : sd) keys.push_back(k);
  const std::vector<std::string> expected{"fc1.bias", "fc1.weight", "head.1.weight", "scale",
                                          "steps"};
  BOOST_TEST(keys == expected, boost::test_tools::per_element());
  BOOST_TEST(!sd.at("fc1.weight").requires_grad());
}

BOOST_AUTO_TEST_CASE(train_and_eval_apply_to_all_descendants) {
  auto net = std::make_shared<Net>();
  BOOST_TEST(net->is_training());
  net->eval();
  for (auto& m : net->modules()) BOOST_TEST(!m->is_training());
  net->train();
  for (auto& m : net->modules()) BOOST_TEST(m->is_training());
}

BOOST_AUTO_TEST_CASE(to_dtype_changes_parameters_in_place_keeping_handle_identity) {
  auto net = std::make_shared<Net>();
  Tensor held = net->fc1->weight;  // as an optimizer would hold it
  const std::vector<float> before = held.to_vector<float>();
  net->fc1->weight.sum().backward();
  net->to(DType::Float16);
  BOOST_TEST(dtype_name(held.dtype()) == "Float16");
  BOOST_TEST(dtype_name(net->fc1->weight.dtype()) == "Float16");
  BOOST_TEST(dtype_name(net->named_parameters()[0].second.dtype()) == "Float16");
  BOOST_TEST(dtype_name(held.grad().dtype()) == "Float16");
  BOOST_TEST(held.requires_grad());
  BOOST_TEST(held.is_leaf());
  BOOST_TEST(dtype_name(net->scale.dtype()) == "Float16");
  BOOST_TEST(dtype_name(net->steps.dtype()) == "Int64");  // integer buffers keep their dtype
  const std::vector<float> after = held.to_vector<float>();
  for (size_t i = 0; i < before.size(); ++i) {
    BOOST_TEST(after[i] == float(Half(before[i])));
  }
  // The cast model trains: gradients reach the same handles in the new dtype.
  net->zero_grad();
  (*net)(ones({2, 4}, {.dtype = DType::Float16})).sum().backward();
  BOOST_TEST(dtype_name(held.grad().dtype()) == "Float16");
  net->to(DType::Float32);
  BOOST_TEST(dtype_name(held.dtype()) == "Float32");
}

BOOST_AUTO_TEST_CASE(to_device_cpu_keeps_handles) {
  auto net = std::make_shared<Net>();
  Tensor held = net->fc1->bias;
  net->to(Device::cpu());
  BOOST_TEST(held.is_same(net->fc1->bias));
  BOOST_TEST((held.device().type == DeviceType::CPU));
}

BOOST_AUTO_TEST_CASE(zero_grad_sets_to_none_or_zeroes) {
  auto net = std::make_shared<Net>();
  (*net)(ones({2, 4})).sum().backward();
  BOOST_TEST(net->fc1->weight.grad().defined());
  net->zero_grad(false);
  BOOST_TEST(net->fc1->weight.grad().defined());
  BOOST_TEST(net->fc1->weight.grad().sum().item<double>() == 0.0);
  net->zero_grad();
  BOOST_TEST(!net->fc1->weight.grad().defined());
}

BOOST_AUTO_TEST_CASE(forward_hooks_replace_input_and_output) {
  auto lin = std::make_shared<nn::Linear>(2, 2);
  std::vector<std::string> calls;
  lin->register_forward_pre_hook([&](nn::Module& m, const Tensor& x) {
    calls.push_back("pre:" + m.name());
    return x.to(DType::Float64);
  });
  lin->register_forward_pre_hook([&](nn::Module&, const Tensor& x) {
    calls.push_back(std::string("pre2:") + dtype_name(x.dtype()));
    return x.to(DType::Float32);
  });
  const auto id = lin->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
    calls.push_back("post");
    return out.to(DType::BFloat16);
  });
  lin->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
    calls.push_back(std::string("post2:") + dtype_name(out.dtype()));
    return Tensor();  // undefined: keep the output
  });
  const Tensor y = (*lin)(ones({1, 2}, {.dtype = DType::Float16}));
  const std::vector<std::string> expected{"pre:Linear", "pre2:Float64", "post", "post2:BFloat16"};
  BOOST_TEST(calls == expected, boost::test_tools::per_element());
  BOOST_TEST(dtype_name(y.dtype()) == "BFloat16");
  BOOST_TEST(lin->remove_hook(id));
  BOOST_TEST(!lin->remove_hook(id));
  BOOST_TEST(dtype_name((*lin)(ones({1, 2})).dtype()) == "Float32");
}

BOOST_AUTO_TEST_CASE(forward_runs_inside_a_scoped_name) {
  struct Probe : nn::Module {
    Probe() : Module("Probe") {}
    Tensor forward(const Tensor& x) override {
      seen = autograd::ScopedName::current();
      return x;
    }
    std::string seen;
  };
  auto probe = std::make_shared<Probe>();
  auto seq =
      std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{probe});
  (*seq)(ones({1}));
  BOOST_TEST(probe->seen.find("0") != std::string::npos);
  BOOST_TEST(probe->seen.find("Sequential") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(state_dict_round_trip_copies_values_into_existing_tensors) {
  manual_seed(1);
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  b->to(DType::BFloat16);
  Tensor held = b->fc1->weight;
  {
    NoGradGuard no_grad;
    a->scale.fill_(3.0);
  }
  b->load_state_dict(a->state_dict());
  BOOST_TEST(held.is_same(b->fc1->weight));
  BOOST_TEST(held.requires_grad());
  BOOST_TEST(dtype_name(held.dtype()) == "BFloat16");  // values converted, dtype kept
  const auto va = a->fc1->weight.to_vector<float>();
  const auto vb = held.to_vector<float>();
  for (size_t i = 0; i < va.size(); ++i) BOOST_TEST(vb[i] == float(BFloat16(va[i])));
  BOOST_TEST(b->scale.to_vector<float>()[1] == 3.0f);
}

BOOST_AUTO_TEST_CASE(load_state_dict_lists_missing_and_unexpected_keys) {
  auto net = std::make_shared<Net>();
  StateDict sd = net->state_dict();
  sd.erase("fc1.bias");
  sd.erase("steps");
  sd["fc2.weight"] = zeros({1});
  try {
    net->load_state_dict(sd);
    BOOST_FAIL("expected amp::Error");
  } catch (const Error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(amp_test::has({"Error(s) in loading state_dict for Net"})(e));
    BOOST_TEST(amp_test::has({"Missing key(s) in state_dict: \"steps\", \"fc1.bias\"."})(e));
    BOOST_TEST(amp_test::has({"Unexpected key(s) in state_dict: \"fc2.weight\"."})(e));
  }
}

BOOST_AUTO_TEST_CASE(load_state_dict_reports_size_mismatch_and_copies_nothing) {
  auto net = std::make_shared<Net>();
  const std::vector<float> before = net->fc1->bias.to_vector<float>();
  StateDict sd = net->state_dict();
  for (auto& [k, v] : sd) sd[k] = v.clone();
  sd["fc1.bias"] = zeros({7});
  sd["fc1.weight"] = zeros({3, 4});
  try {
    net->load_state_dict(sd, /*strict=*/false);
    BOOST_FAIL("expected amp::Error");
  } catch (const Error& e) {
    BOOST_TEST(
        amp_test::has({"size mismatch for fc1.bias: copying a param with shape [7] from "
                       "checkpoint, the shape in current model is [3]."})(e));
  }
  BOOST_TEST(net->fc1->bias.to_vector<float>() == before, boost::test_tools::per_element());
  BOOST_TEST(amp::abs(net->fc1->weight).sum().item<double>() > 0.0);
}

BOOST_AUTO_TEST_CASE(non_strict_load_ignores_missing_and_unexpected_keys) {
  auto net = std::make_shared<Net>();
  StateDict sd;
  sd["fc1.bias"] = full({3}, 2.0);
  sd["extra"] = zeros({1});
  net->load_state_dict(sd, /*strict=*/false);
  BOOST_TEST(net->fc1->bias.to_vector<float>()[2] == 2.0f);
}

BOOST_AUTO_TEST_CASE(modules_requires_shared_ownership) {
  nn::Linear on_stack(2, 2);
  BOOST_CHECK_THROW(on_stack.modules(), Error);
  BOOST_TEST(on_stack.parameters().size() == 2u);
}

BOOST_AUTO_TEST_CASE(registering_a_name_twice_as_different_kinds_raises) {
  struct Bad : nn::Module {
    Bad() : Module("Bad") {
      register_parameter("w", zeros({1}));
      register_buffer("w", zeros({1}));
    }
  };
  BOOST_CHECK_THROW(Bad(), Error);
}

BOOST_AUTO_TEST_CASE(base_forward_raises_and_repr_prints_the_tree) {
  auto net = std::make_shared<Net>();
  const std::string repr = net->repr();
  BOOST_TEST(repr.find("(fc1): Linear(in_features=4, out_features=3, bias=True)") !=
             std::string::npos);
  BOOST_TEST(repr.find("(1): Linear(in_features=3, out_features=2, bias=False)") !=
             std::string::npos);
  auto bare = std::make_shared<nn::Module>();
  BOOST_CHECK_THROW((*bare)(ones({1})), Error);
}

BOOST_AUTO_TEST_CASE(to_with_a_predicate_casts_only_what_the_selected_modules_own) {
  auto net = std::make_shared<Net>();
  const nn::Module* selected = net->fc1.get();
  net->to(DType::Float16, [&](const nn::Module& m) { return &m == selected; });
  BOOST_TEST(dtype_name(net->fc1->weight.dtype()) == "Float16");
  BOOST_TEST(dtype_name(net->fc1->bias.dtype()) == "Float16");
  // The root's buffer and the other Linear are not owned by the selected module.
  BOOST_TEST(dtype_name(net->scale.dtype()) == "Float32");
  BOOST_TEST(dtype_name(net->head->parameters()[0].dtype()) == "Float32");
  BOOST_TEST(dtype_name(net->steps.dtype()) == "Int64");
  BOOST_CHECK_THROW(net->to(DType::Int64, [](const nn::Module&) { return true; }), Error);
  BOOST_CHECK_THROW(net->to(DType::Float16, nn::Module::ModulePredicate()), Error);
}

BOOST_AUTO_TEST_CASE(apply_visits_the_children_before_their_parent) {
  auto net = std::make_shared<Net>();
  std::vector<std::string> order;
  net->apply([&](nn::Module& m) { order.push_back(m.name()); });
  const std::vector<std::string> expected{"Linear", "ReLU", "Linear", "Sequential", "Net"};
  BOOST_TEST(order == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(state_dict_hooks_see_every_module_with_its_key_prefix) {
  auto net = std::make_shared<Net>();
  std::vector<std::string> prefixes;
  const auto id = net->head->register_state_dict_hook(
      [&](const nn::Module& m, StateDict& sd, const std::string& prefix) {
        prefixes.push_back(prefix + m.name());
        sd.at(prefix + "1.weight") = zeros({2, 3}, {.dtype = DType::Float64});
      });
  net->fc1->register_state_dict_hook([&](const nn::Module& m, StateDict&, const std::string& p) {
    prefixes.push_back(p + m.name());
  });
  const StateDict sd = net->state_dict();
  const std::vector<std::string> expected{"fc1.Linear", "head.Sequential"};
  BOOST_TEST(prefixes == expected, boost::test_tools::per_element());
  BOOST_TEST(dtype_name(sd.at("head.1.weight").dtype()) == "Float64");
  BOOST_TEST(dtype_name(sd.at("fc1.weight").dtype()) == "Float32");
  BOOST_TEST(net->head->remove_hook(id));
  BOOST_TEST(dtype_name(net->state_dict().at("head.1.weight").dtype()) == "Float32");
  BOOST_CHECK_THROW(net->register_state_dict_hook(nn::Module::StateDictHook()), Error);
}

BOOST_AUTO_TEST_CASE(load_state_dict_post_hooks_run_after_the_values_are_copied) {
  auto net = std::make_shared<Net>();
  StateDict sd = net->state_dict();
  sd["fc1.bias"] = full({3}, 7.0);
  double seen = 0;
  std::string seen_prefix = "unset";
  net->fc1->register_load_state_dict_post_hook(
      [&](nn::Module& m, const StateDict& loaded, const std::string& prefix) {
        seen = m.named_parameters()[1].second.to_vector<double>()[0];
        seen_prefix = prefix;
        BOOST_TEST(loaded.count(prefix + "bias") == 1u);
      });
  net->load_state_dict(sd);
  BOOST_TEST(seen == 7.0);
  BOOST_TEST(seen_prefix == "fc1.");
}

BOOST_AUTO_TEST_CASE(call_casts_convert_floating_inputs_and_outputs_only) {
  // Two inputs: a floating one and an integer one; returns both unchanged.
  struct Echo : nn::Module {
    Echo() : Module("Echo") {}
    std::pair<Tensor, Tensor> forward(const Tensor& x, const Tensor& labels) {
      seen_x = x.dtype();
      seen_labels = labels.dtype();
      return {x * 2.0, labels};
    }
    Tensor forward(const Tensor& x) override {
      seen_x = x.dtype();
      return x * 2.0;
    }
    DType seen_x = DType::Bool, seen_labels = DType::Bool;
  };
  auto echo = std::make_shared<Echo>();
  echo->set_call_casts({DType::Float16, DType::Float64});
  const Tensor x = full({2}, 1.5);
  const Tensor labels = zeros({2}, {.dtype = DType::Int64});
  const auto [y, l] = nn::call(*echo, x, labels);
  BOOST_TEST(dtype_name(echo->seen_x) == "Float16");
  BOOST_TEST(dtype_name(echo->seen_labels) == "Int64");
  BOOST_TEST(dtype_name(y.dtype()) == "Float64");
  BOOST_TEST(dtype_name(l.dtype()) == "Int64");
  BOOST_TEST(y.to_vector<double>() == std::vector<double>({3.0, 3.0}),
             boost::test_tools::per_element());
  const Tensor z = (*echo)(x);
  BOOST_TEST(dtype_name(echo->seen_x) == "Float16");
  BOOST_TEST(dtype_name(z.dtype()) == "Float64");
  // Without call casts nothing converts.
  echo->set_call_casts({});
  BOOST_TEST(dtype_name((*echo)(x).dtype()) == "Float32");
}

BOOST_AUTO_TEST_SUITE_END()
