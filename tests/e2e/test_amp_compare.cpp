// End to end: examples/amp_compare run as a user runs it, on a small subset of Fashion-MNIST
// with small models. Its output files are checked against the documented schema
// (docs/amp_compare.md) and against each other: results.json's keys and types, per-step arrays
// as long as the run, results.csv's rows and values equal to the JSON's, each SVG well-formed
// XML with one plotted path per run. Bad command lines must exit with status 2 and one line on
// stderr naming the bad value.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "amp/amp.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Set by tests/CMakeLists.txt where the examples are built.
#ifdef AMPCPP_AMP_COMPARE_BINARY
constexpr const char* kBinary = AMPCPP_AMP_COMPARE_BINARY;
#else
constexpr const char* kBinary = "";
#endif

boost::test_tools::assertion_result amp_compare_is_built(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result built(*kBinary != '\0');
  if (!built) built.message() << "amp_compare is not built (AMPCPP_BUILD_EXAMPLES=OFF)";
  return built;
}

// The small comparison: 512 samples in batches of 64 (8 steps), one epoch, 500 test samples,
// one thread (ctest runs suites in parallel).
const std::string kSmallRun =
    "--train-limit 512 --batch-size 64 --epochs 1 --test-limit 500 --threads 1";
constexpr int64_t kSmallRunSteps = 8;
constexpr int64_t kFinalLossSteps = 20;  // examples/compare/runs.h

const std::vector<std::string> kCsvHeader = {
    "workflow",           "opt_level",       "dtype",         "ms_per_step",
    "samples_per_second", "speedup_vs_fp32", "peak_bytes",    "peak_ratio_vs_fp32",
    "final_train_loss",   "test_accuracy",   "skipped_steps", "final_loss_scale"};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Outcome {
  int status = -1;
  std::string out, err;
};

// A fresh directory per test case, removed at its end.
struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("amp_compare_test_" + std::to_string(getpid()) + "_" +
                                   boost::unit_test::framework::current_test_case().p_name.get());
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }

  // Runs amp_compare with `args` (a shell word list), stdout and stderr kept apart.
  Outcome run(const std::string& args) const {
    const fs::path out = path / "stdout.txt", err = path / "stderr.txt";
    const std::string command = std::string("'") + kBinary + "' " + args + " > '" + out.string() +
                                "' 2> '" + err.string() + "'";
    const int raw = std::system(command.c_str());
    Outcome o;
    o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    o.out = read_text(out);
    o.err = read_text(err);
    return o;
  }
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

bool nearly_equal(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}

// Every key of one run in results.json, with its type and range.
void check_run_schema(const json& run) {
  for (const char* key : {"workflow", "opt_level", "dtype"}) {
    BOOST_TEST_REQUIRE(run.contains(key), key);
    BOOST_TEST(run[key].is_string(), key);
  }
  for (const char* key : {"steps", "samples", "peak_bytes", "skipped_steps"}) {
    BOOST_TEST_REQUIRE(run.contains(key), key);
    BOOST_TEST(run[key].is_number_integer(), key);
  }
  for (const char* key : {"train_seconds", "ms_per_step", "samples_per_second", "final_train_loss",
                          "test_accuracy", "final_loss_scale"}) {
    BOOST_TEST_REQUIRE(run.contains(key), key);
    BOOST_TEST(run[key].is_number(), key);
  }
  for (const char* key : {"speedup_vs_fp32", "peak_ratio_vs_fp32"}) {
    BOOST_TEST_REQUIRE(run.contains(key), key);
    BOOST_TEST((run[key].is_number() || run[key].is_null()), key);
  }
  const int64_t steps = run["steps"];
  BOOST_TEST(steps == kSmallRunSteps);
  BOOST_TEST(run["samples"].get<int64_t>() == 512);
  BOOST_TEST(run["ms_per_step"].get<double>() > 0);
  // samples/s is the mean batch over the median step.
  BOOST_TEST(
      nearly_equal(run["samples_per_second"].get<double>() *
                       (1e-3 * run["ms_per_step"].get<double>() * static_cast<double>(steps)),
                   run["samples"].get<double>()));
  BOOST_TEST(run["peak_bytes"].get<int64_t>() > 0);
  const double accuracy = run["test_accuracy"];
  BOOST_TEST((accuracy >= 0 && accuracy <= 1), "test_accuracy " << accuracy);
  BOOST_TEST((run["skipped_steps"] >= 0 && run["skipped_steps"] <= steps));

  BOOST_TEST_REQUIRE(run["loss"].is_array());
  BOOST_TEST_REQUIRE(run["loss_scale"].is_array());
  BOOST_TEST_REQUIRE(run["loss"].size() == static_cast<size_t>(steps));
  BOOST_TEST_REQUIRE(run["loss_scale"].size() == static_cast<size_t>(steps));
  std::vector<double> losses;
  for (const json& v : run["loss"]) {
    BOOST_TEST_REQUIRE(v.is_number());
    losses.push_back(v);
  }
  for (const json& v : run["loss_scale"]) BOOST_TEST((v.is_number() && v.get<double>() > 0));
  BOOST_TEST(run["final_loss_scale"].get<double>() == run["loss_scale"].back().get<double>());
  const auto k = static_cast<std::ptrdiff_t>(std::min<size_t>(kFinalLossSteps, losses.size()));
  const double final_loss = std::accumulate(losses.end() - k, losses.end(), 0.0) / k;
  BOOST_TEST(nearly_equal(run["final_train_loss"], final_loss));
}

// results.csv: the header, one row per run in results.json's order, the same values.
void check_csv(const std::string& csv, const json& runs) {
  const std::vector<std::string> lines = split(csv, '\n');
  BOOST_TEST_REQUIRE(lines.size() == runs.size() + 1);
  BOOST_TEST(split(lines[0], ',') == kCsvHeader, boost::test_tools::per_element());
  const json& baseline = runs[0];
  for (size_t i = 0; i < runs.size(); ++i) {
    BOOST_TEST_CONTEXT("results.csv row " << i + 1 << ": " << lines[i + 1]) {
      const std::vector<std::string> cells = split(lines[i + 1], ',');
      BOOST_TEST_REQUIRE(cells.size() == kCsvHeader.size());
      const json& run = runs[i];
      for (size_t c = 0; c < kCsvHeader.size(); ++c) {
        const json& value = run[kCsvHeader[c]];
        if (value.is_string()) {
          BOOST_TEST(cells[c] == value.get<std::string>(), kCsvHeader[c]);
        } else {
          BOOST_TEST(nearly_equal(std::stod(cells[c]), value.get<double>()), kCsvHeader[c]);
        }
      }
      BOOST_TEST(nearly_equal(run["speedup_vs_fp32"], baseline["ms_per_step"].get<double>() /
                                                          run["ms_per_step"].get<double>()));
      BOOST_TEST(nearly_equal(run["peak_ratio_vs_fp32"], run["peak_bytes"].get<double>() /
                                                             baseline["peak_bytes"].get<double>()));
    }
  }
}

void collect_series_paths(const boost::property_tree::ptree& node, std::vector<std::string>& d) {
  for (const auto& [name, child] : node) {
    if (name == "path" && child.get("<xmlattr>.class", "") == "series") {
      d.push_back(child.get("<xmlattr>.d", ""));
    }
    collect_series_paths(child, d);
  }
}

// Well-formed XML (Boost.PropertyTree's parser throws otherwise), an <svg> root in the SVG
// namespace, one plotted path per run, each with points.
void check_svg(const fs::path& file, const json& runs) {
  BOOST_TEST_CONTEXT(file.filename().string()) {
    boost::property_tree::ptree tree;
    BOOST_REQUIRE_NO_THROW(boost::property_tree::read_xml(file.string(), tree));
    BOOST_TEST(tree.get("svg.<xmlattr>.xmlns", "") == "http://www.w3.org/2000/svg");
    std::vector<std::string> paths;
    collect_series_paths(tree, paths);
    BOOST_TEST(paths.size() == runs.size());
    for (const std::string& d : paths) BOOST_TEST(d.rfind("M", 0) == 0, "path d=\"" << d << "\"");
    const std::string text = read_text(file);
    for (const json& run : runs) {
      const std::string label = run["workflow"].get<std::string>() + " " +
                                run["opt_level"].get<std::string>() + " " +
                                run["dtype"].get<std::string>();
      BOOST_TEST(text.find(">" + label + "</text>") != std::string::npos, "legend " << label);
    }
  }
}

// The runs of results.json as "opt_level dtype" strings.
std::vector<std::string> run_names(const json& runs) {
  std::vector<std::string> names;
  for (const json& run : runs) {
    names.push_back(run["opt_level"].get<std::string>() + " " + run["dtype"].get<std::string>());
  }
  return names;
}

void check_outputs(const fs::path& dir, const std::vector<std::string>& expected_runs) {
  for (const char* file : {"results.json", "results.csv", "loss_curve.svg", "loss_scale.svg"}) {
    BOOST_TEST_REQUIRE(fs::exists(dir / file), file);
  }
  const json results = json::parse(read_text(dir / "results.json"));
  BOOST_TEST_REQUIRE(results["runs"].is_array());
  BOOST_TEST(results["options"].is_object());
  BOOST_TEST(results["machine"].is_object());
  BOOST_TEST(results["options"]["train_limit"] == 512);
  BOOST_TEST(results["machine"]["threads"] == 1);
  const json& runs = results["runs"];
  BOOST_TEST(run_names(runs) == expected_runs, boost::test_tools::per_element());
  for (const json& run : runs) {
    BOOST_TEST_CONTEXT(run.dump().substr(0, 80)) { check_run_schema(run); }
  }
  check_csv(read_text(dir / "results.csv"), runs);
  check_svg(dir / "loss_curve.svg", runs);
  check_svg(dir / "loss_scale.svg", runs);
}

// A bad command line: status 2, nothing on stdout, one line on stderr holding every part.
void check_usage_error(const TempDir& tmp, const std::string& args,
                       const std::vector<std::string>& parts) {
  BOOST_TEST_CONTEXT("amp_compare " << args) {
    const Outcome o = tmp.run(args);
    BOOST_TEST(o.status == 2);
    BOOST_TEST(o.out.empty(), "stdout: " << o.out);
    BOOST_TEST(std::count(o.err.begin(), o.err.end(), '\n') == 1, "stderr: " << o.err);
    for (const std::string& part : parts) {
      BOOST_TEST(o.err.find(part) != std::string::npos,
                 "stderr '" << o.err << "' lacks '" << part << "'");
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(amp_compare, *boost::unit_test::precondition(amp_compare_is_built))

BOOST_AUTO_TEST_CASE(apex_workflow_writes_every_output_with_the_documented_schema) {
  const TempDir tmp;
  const fs::path out = tmp.path / "out";
  const Outcome o = tmp.run(kSmallRun + " --width 32 --out '" + out.string() + "'");
  BOOST_TEST_REQUIRE(o.status == 0, "stderr: " << o.err);
  check_outputs(out, {"O0 fp32", "O1 fp16", "O1 bf16", "O2 fp16", "O2 bf16", "O3 fp16", "O3 bf16"});
  // stdout is a file here: plain progress lines (no \r redraws), the last step of every run.
  BOOST_TEST(o.out.find('\r') == std::string::npos);
  BOOST_TEST(o.out.find("apex O2 bf16  epoch 1/1  step 8/8") != std::string::npos, o.out);
  BOOST_TEST(o.out.find("test acc") != std::string::npos, "the table's header");
}

BOOST_AUTO_TEST_CASE(torch_workflow_with_a_transformer_and_a_fused_optimizer) {
  const TempDir tmp;
  const fs::path out = tmp.path / "out";
  const Outcome o = tmp.run(kSmallRun +
                            " --workflow torch --model transformer --width 16 --optimizer "
                            "fused_adam --quiet --out '" +
                            out.string() + "'");
  BOOST_TEST_REQUIRE(o.status == 0, "stderr: " << o.err);
  check_outputs(out, {"baseline fp32", "autocast fp16", "autocast bf16"});
  BOOST_TEST(o.out.find("epoch 1/1") == std::string::npos, "--quiet prints no progress: " << o.out);
}

BOOST_AUTO_TEST_CASE(cnn_at_two_opt_levels) {
  const TempDir tmp;
  const fs::path out = tmp.path / "out";
  const Outcome o = tmp.run(kSmallRun +
                            " --model cnn --width 4 --opt-levels O2,O0 --dtype bf16 "
                            "--optimizer adamw --quiet --out '" +
                            out.string() + "'");
  BOOST_TEST_REQUIRE(o.status == 0, "stderr: " << o.err);
  check_outputs(out, {"O0 fp32", "O2 bf16"});
}

BOOST_AUTO_TEST_CASE(bad_command_lines_exit_with_status_2_naming_the_value) {
  const TempDir tmp;
  check_usage_error(tmp, "--opt-levels O0,O5", {"O5", "O0, O1, O2, O3"});
  check_usage_error(tmp, "--model resnet", {"resnet", "mlp, cnn, transformer"});
  check_usage_error(tmp, "--optimizer lbfgs", {"lbfgs", "fused_lamb"});
  check_usage_error(tmp, "--batch-size 0", {"--batch-size", "0"});
  check_usage_error(tmp, "--epochs 0", {"--epochs", "0"});
  check_usage_error(tmp, "--lr -0.5", {"--lr", "-0.5"});
  check_usage_error(tmp, "--epochs two", {"--epochs", "two"});
  check_usage_error(tmp, "--threads 0", {"--threads", "0"});
  check_usage_error(tmp, "--model cnn --device cuda", {"--model cnn", "--device cpu only"});
  check_usage_error(tmp, "--model transformer --device cuda",
                    {"--model transformer", "scaled_dot_product_attention"});
  const fs::path file = tmp.path / "a_file";
  std::ofstream(file) << "not a directory";
  check_usage_error(tmp, "--out '" + (file / "results").string() + "'",
                    {"--out", (file / "results").string()});
  check_usage_error(tmp,
                    "--data-dir '" + (tmp.path / "no_data").string() + "' --out '" +
                        (tmp.path / "out").string() + "'",
                    {"dataset-fashion-mnist", "scripts/setup.sh", "no_data"});
  if (!amp::cuda::is_available()) check_usage_error(tmp, "--device cuda", {"--device cuda"});
}

BOOST_AUTO_TEST_SUITE_END()
