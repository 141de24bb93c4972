// amp::initialize's properties: apex's O0-O3 presets, the order and validation of overrides with
// apex's messages, and the printed "Selected optimization level" block. The expected tables and
// texts are apex's (apex/amp/frontend.py: Properties, the O0-O3 presets, initialize), written out
// here with the C++ spellings docs/apex_compat.md lists.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amp/amp.h"
#include "tests/amp/frontend_test_util.h"

namespace {

using amp::DType;
using amp::Overrides;
using amp::Properties;
using amp_test::check_error;
using amp_test::CoutCapture;
using amp_test::quiet;

struct Case {
  std::string level;
  std::optional<DType> cast_model_type;
  bool patch_functions;
  std::optional<bool> keep_batchnorm_fp32;
  std::optional<bool> master_weights;
  std::optional<double> static_scale;  // nullopt: "dynamic"
};

// apex's preset table (the O0-O3 classes of apex/amp/frontend.py; docs/amp.md, "Opt levels").
const std::vector<Case> kPresets = {
    {"O0", DType::Float32, false, std::nullopt, false, 1.0},
    {"O1", std::nullopt, true, std::nullopt, std::nullopt, std::nullopt},
    {"O2", DType::Float16, false, true, true, std::nullopt},
    {"O3", DType::Float16, false, false, false, 1.0},
};

struct Setup {
  std::shared_ptr<amp::nn::Linear> model = std::make_shared<amp::nn::Linear>(3, 2);
  amp::optimizers::SGD optimizer{model->parameters(), {.lr = 0.1}};
};

void check_preset(const Properties& p, const Case& c) {
  BOOST_TEST(p.enabled);
  BOOST_TEST(p.opt_level == c.level);
  BOOST_TEST((p.cast_model_type == c.cast_model_type));
  BOOST_TEST(p.patch_functions == c.patch_functions);
  BOOST_TEST((p.keep_batchnorm_fp32 == c.keep_batchnorm_fp32));
  BOOST_TEST((p.master_weights == c.master_weights));
  if (c.static_scale) {
    BOOST_TEST_REQUIRE(std::holds_alternative<double>(p.loss_scale));
    BOOST_TEST(std::get<double>(p.loss_scale) == *c.static_scale);
  } else {
    BOOST_TEST_REQUIRE(std::holds_alternative<std::string>(p.loss_scale));
    BOOST_TEST(std::get<std::string>(p.loss_scale) == "dynamic");
  }
}

// Runs a failing initialize after an O0 one and checks that nothing changed: the properties,
// the model's dtypes and the optimizer (it can still be initialized).
void check_rejected_without_change(const std::string& level, const Overrides& o,
                                   const std::vector<std::string>& message) {
  Setup before;
  amp::initialize(*before.model, before.optimizer, "O0", quiet());
  Setup s;
  check_error([&] { amp::initialize(*s.model, s.optimizer, level, quiet(o)); }, message);
  BOOST_TEST(amp::properties().opt_level == "O0");
  BOOST_TEST(s.model->weight.dtype() == DType::Float32);
  BOOST_TEST(s.optimizer.master_weights().empty());
  BOOST_CHECK_NO_THROW(amp::initialize(*s.model, s.optimizer, "O2", quiet()));
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(amp_properties, amp_test::FreshAmpState)

BOOST_AUTO_TEST_CASE(each_opt_level_applies_apexs_preset) {
  for (const Case& c : kPresets) {
    BOOST_TEST_CONTEXT(c.level) {
      Setup s;
      const Properties p = amp::initialize(*s.model, s.optimizer, c.level, quiet());
      check_preset(p, c);
      check_preset(amp::properties(), c);
    }
  }
}

BOOST_AUTO_TEST_CASE(properties_start_as_apexs_fresh_properties) {
  const Properties p;
  BOOST_TEST(!p.enabled);
  BOOST_TEST(p.opt_level.empty());
  BOOST_TEST(!p.cast_model_type.has_value());
  BOOST_TEST(!p.patch_functions);
  BOOST_TEST(!p.keep_batchnorm_fp32.has_value());
  BOOST_TEST(!p.master_weights.has_value());
  BOOST_TEST(std::get<double>(p.loss_scale) == 1.0);
}

BOOST_AUTO_TEST_CASE(low_precision_dtype_bfloat16_is_the_model_dtype_of_o2_and_o3) {
  for (const std::string level : {"O2", "O3"}) {
    Setup s;
    const Properties p = amp::initialize(*s.model, s.optimizer, level,
                                         quiet({.low_precision_dtype = DType::BFloat16}));
    BOOST_TEST((p.cast_model_type == DType::BFloat16));
    BOOST_TEST(p.low_precision_dtype == DType::BFloat16);
    BOOST_TEST(s.model->weight.dtype() == DType::BFloat16);
  }
  Setup s;
  check_error(
      [&] {
        amp::initialize(*s.model, s.optimizer, "O2",
                        quiet({.low_precision_dtype = DType::Float64}));
      },
      {"amp::initialize: expected low_precision_dtype Float16 or BFloat16, got Float64"});
}

BOOST_AUTO_TEST_CASE(an_unknown_opt_level_raises_apexs_error_and_changes_nothing) {
  for (const std::string bad : {"O4", "00", "o1", ""}) {
    check_rejected_without_change(
        bad, {},
        {"Unexpected optimization level " + bad +
         ". Options are 'O0', 'O1', 'O2', 'O3'.  Note that in `O0`, `O1`, etc., the prefix O is "
         "the letter O, not the number zero."});
  }
}

BOOST_AUTO_TEST_CASE(o1_rejects_a_cast_model_type_other_than_float32) {
  check_rejected_without_change(
      "O1", {.cast_model_type = DType::Float16},
      {"O1 inserts casts around Torch functions rather than model weights, so with O1, the model "
       "weights themselves should remain FP32. If you wish to cast the model to a different "
       "type, use opt_level='O2' or 'O3'. cast_model_type was Float16"});
  Setup s;
  const Properties p =
      amp::initialize(*s.model, s.optimizer, "O1", quiet({.cast_model_type = DType::Float32}));
  BOOST_TEST((p.cast_model_type == DType::Float32));
}

BOOST_AUTO_TEST_CASE(patch_functions_is_only_for_o1) {
  for (const std::string level : {"O0", "O2", "O3"}) {
    check_rejected_without_change(
        level, {.patch_functions = true},
        {"Currently, patch_functions=true should only be set by selecting opt_level='O1'."});
  }
  Setup s;  // false is a legal override anywhere
  BOOST_TEST(!amp::initialize(*s.model, s.optimizer, "O2", quiet({.patch_functions = false}))
                  .patch_functions);
}

BOOST_AUTO_TEST_CASE(keep_batchnorm_fp32_with_o1_raises_apexs_error) {
  for (const bool value : {true, false}) {
    check_rejected_without_change(
        "O1", {.keep_batchnorm_fp32 = value},
        {"With opt_level O1, batchnorm functions are automatically patched to run in FP32, so "
         "keep_batchnorm_fp32 should be nullopt. keep_batchnorm_fp32 was " +
         std::string(value ? "true" : "false")});
  }
}

BOOST_AUTO_TEST_CASE(master_weights_with_o1_raises_apexs_error_even_when_false) {
  for (const bool value : {true, false}) {
    check_rejected_without_change(
        "O1", {.master_weights = value},
        {"It doesn't make sense to use master_weights with O1. With O1, your model weights "
         "themselves should be FP32."});
  }
}

BOOST_AUTO_TEST_CASE(legal_overrides_replace_the_preset_values) {
  {
    Setup s;
    const Properties p =
        amp::initialize(*s.model, s.optimizer, "O2", quiet({.master_weights = false}));
    BOOST_TEST((p.master_weights == false));
    BOOST_TEST(s.optimizer.master_weights().empty());
  }
  {
    Setup s;
    const Properties p =
        amp::initialize(*s.model, s.optimizer, "O3", quiet({.keep_batchnorm_fp32 = true}));
    BOOST_TEST((p.keep_batchnorm_fp32 == true));
  }
  {
    Setup s;
    const Properties p = amp::initialize(*s.model, s.optimizer, "O0",
                                         quiet({.loss_scale = amp::LossScale("dynamic")}));
    BOOST_TEST(p.dynamic_loss_scale());
  }
  {
    Setup s;  // apex: a numeric string is a static scale
    const Properties p = amp::initialize(*s.model, s.optimizer, "O2",
                                         quiet({.loss_scale = amp::LossScale("128.0")}));
    BOOST_TEST(std::get<double>(p.loss_scale) == 128.0);
  }
  {
    Setup s;
    const Properties p = amp::initialize(*s.model, s.optimizer, "O1", quiet({.loss_scale = 512.0}));
    BOOST_TEST(std::get<double>(p.loss_scale) == 512.0);
  }
}

BOOST_AUTO_TEST_CASE(a_loss_scale_that_is_not_a_usable_number_is_rejected) {
  check_rejected_without_change("O2", {.loss_scale = amp::LossScale("abc")},
                                {"loss_scale: could not convert string to float: 'abc'"});
  check_rejected_without_change("O2", {.loss_scale = amp::LossScale("128.0x")},
                                {"could not convert string to float: '128.0x'"});
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), 1e-39}) {
    check_rejected_without_change("O2", {.loss_scale = bad}, {"loss_scale: expected"});
  }
}

BOOST_AUTO_TEST_CASE(other_bad_options_are_rejected_and_change_nothing) {
  check_rejected_without_change("O2", {.num_losses = 0},
                                {"amp::initialize: expected num_losses in [1, 65536], got 0"});
  check_rejected_without_change("O2", {.max_loss_scale = 0.0},
                                {"amp::initialize: expected a finite max_loss_scale > 0"});
  check_rejected_without_change("O2", {.min_loss_scale = 1e9},
                                {"amp::initialize: expected min_loss_scale in [0, "});
  check_rejected_without_change("O2", {.cast_model_outputs = DType::Int64},
                                {"expected a floating-point cast_model_outputs, got Int64"});
}

BOOST_AUTO_TEST_CASE(verbosity_1_prints_apexs_selection_block_with_overrides) {
  Setup s;
  CoutCapture out;
  amp::initialize(*s.model, s.optimizer, "O2", {.loss_scale = 128.0});
  const std::string table_defaults =
      "enabled                : true\n"
      "opt_level              : O2\n"
      "cast_model_type        : Float16\n"
      "patch_functions        : false\n"
      "keep_batchnorm_fp32    : true\n"
      "master_weights         : true\n";
  const std::string expected =
      "Selected optimization level O2:  FP16 training with FP32 batchnorm and FP32 master "
      "weights.\n"
      "\n"
      "Defaults for this optimization level are:\n" +
      table_defaults +
      "loss_scale             : dynamic\n"
      "Processing user overrides (additional kwargs that are not None)...\n"
      "After processing overrides, optimization options are:\n" +
      table_defaults + "loss_scale             : 128.0\n";
  BOOST_TEST(out.text() == expected);
}

BOOST_AUTO_TEST_CASE(the_o3_brief_is_not_followed_by_an_empty_line_as_in_apex) {
  Setup s;
  CoutCapture out;
  amp::initialize(*s.model, s.optimizer, "O3");
  const std::string text = out.text();
  BOOST_TEST(text.rfind("Selected optimization level O3:  Pure FP16 training.\n"
                        "Defaults for this optimization level are:\n"
                        "enabled                : true\n"
                        "opt_level              : O3\n"
                        "cast_model_type        : Float16\n"
                        "patch_functions        : false\n"
                        "keep_batchnorm_fp32    : false\n"
                        "master_weights         : false\n"
                        "loss_scale             : 1.0\n",
                        0) == 0u);
}

BOOST_AUTO_TEST_CASE(the_o1_table_spells_apexs_none_as_nullopt) {
  Setup s;
  CoutCapture out;
  amp::initialize(*s.model, s.optimizer, "O1");
  const std::string text = out.text();
  BOOST_TEST(text.find("cast_model_type        : nullopt\n") != std::string::npos);
  BOOST_TEST(text.find("keep_batchnorm_fp32    : nullopt\n") != std::string::npos);
  BOOST_TEST(text.find("master_weights         : nullopt\n") != std::string::npos);
  BOOST_TEST(text.find("Selected optimization level O1:  Insert automatic casts around Pytorch "
                       "functions and Tensor methods.\n\n") == 0u);
}

BOOST_AUTO_TEST_CASE(disable_model_cast_is_reported_as_apexs_cast_model_type_false) {
  for (const char* level : {"O2", "O3"}) {
    BOOST_TEST_CONTEXT(level) {
      Setup s;
      Properties p;
      std::string text;
      {
        CoutCapture out;  // Boost.Test logs to stdout too: check after the capture ends
        p = amp::initialize(*s.model, s.optimizer, level, {.disable_model_cast = true});
        text = out.text();
      }
      BOOST_TEST(!p.cast_model_type.has_value());
      BOOST_TEST(p.model_cast_disabled);
      BOOST_TEST(!amp::properties().cast_model_type.has_value());
      BOOST_TEST(s.model->weight.dtype() == DType::Float32);
      const size_t after = text.find("After processing overrides");
      BOOST_TEST_REQUIRE(after != std::string::npos);
      BOOST_TEST(text.find("cast_model_type        : false\n", after) != std::string::npos);
      // The defaults table still shows the preset's dtype.
      BOOST_TEST(text.find("cast_model_type        : Float16\n") < after);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_tables_print_on_rank_0_only_when_distributed_is_initialised) {
  using amp::detail::prints_on_this_rank;
  BOOST_TEST(prints_on_this_rank(false, 1, 0));
  BOOST_TEST(prints_on_this_rank(true, 1, 0));
  BOOST_TEST(prints_on_this_rank(true, 4, 0));
  BOOST_TEST(!prints_on_this_rank(true, 4, 1));
  BOOST_TEST(!prints_on_this_rank(true, 2, 1));
  // Without init_process_group (this process), every process prints, as apex.
  BOOST_TEST_REQUIRE(!amp::distributed::is_initialized());
  Setup s;
  std::string text;
  {
    CoutCapture out;
    amp::initialize(*s.model, s.optimizer, "O2");
    text = out.text();
  }
  BOOST_TEST(text.find("Selected optimization level O2") == 0u);
}

BOOST_AUTO_TEST_CASE(verbosity_0_prints_nothing) {
  Setup s;
  CoutCapture out;
  amp::initialize(*s.model, s.optimizer, "O2", quiet());
  BOOST_TEST(out.text().empty());
}

BOOST_AUTO_TEST_CASE(a_bfloat16_low_precision_dtype_is_listed_in_the_table) {
  Setup s;
  CoutCapture out;
  amp::initialize(*s.model, s.optimizer, "O2", {.low_precision_dtype = DType::BFloat16});
  BOOST_TEST(out.text().find("cast_model_type        : BFloat16\n") != std::string::npos);
  BOOST_TEST(out.text().find("low_precision_dtype    : BFloat16\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(enabled_false_changes_nothing_and_reports_disabled_properties) {
  Setup s;
  CoutCapture out;
  const Properties p = amp::initialize(*s.model, s.optimizer, "O2", {.enabled = false});
  BOOST_TEST(!p.enabled);
  BOOST_TEST(p.opt_level.empty());
  BOOST_TEST(s.model->weight.dtype() == DType::Float32);
  BOOST_TEST(s.optimizer.master_weights().empty());
  BOOST_TEST(out.text().empty());
}

BOOST_AUTO_TEST_SUITE_END()
