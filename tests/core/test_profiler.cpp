// amp::profiler: which calls a profile records (op, backward node, optimizer step and kernel,
// cast, allocation, user region) for a model whose calls are known from its structure, the
// self/total time arithmetic of nested events, that nothing is recorded outside a profile, the
// table and the Chrome-trace file (parsed as JSON), and the misuse errors.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "amp/amp.h"
#include "tests/support/message_has.h"

namespace {

using amp::DType;
using amp::Tensor;
namespace pr = amp::profiler;
namespace F = amp::nn::functional;

struct Mlp : amp::nn::Module {
  Mlp() : Module("Mlp") {
    amp::manual_seed(1);
    fc1 = register_module("fc1", std::make_shared<amp::nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<amp::nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(F::relu((*fc1)(x))); }
  std::shared_ptr<amp::nn::Linear> fc1, fc2;
};

// The stats row of (kind, name, dtype); count 0 when absent.
pr::OpStats row(const std::vector<pr::OpStats>& stats, pr::EventKind kind, const std::string& name,
                const std::string& dtype) {
  for (const auto& s : stats) {
    if (s.kind == kind && s.name == name && s.dtype == dtype) return s;
  }
  return {};
}

int64_t count_of_kind(const std::vector<pr::Event>& events, pr::EventKind kind) {
  int64_t n = 0;
  for (const auto& e : events) n += e.kind == kind;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(profiler)

BOOST_AUTO_TEST_CASE(a_training_step_records_each_call_once_by_kind_name_and_dtype) {
  Mlp model;
  amp::optimizers::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  amp::manual_seed(2);
  const Tensor x = amp::randn({16, 4});
  const Tensor target = amp::zeros({16, 2});
  pr::profile prof;
  opt.zero_grad();
  const Tensor loss = F::mse_loss(model(x), target);
  loss.backward();
  opt.step();
  prof.stop();

  using K = pr::EventKind;
  const auto stats = prof.key_averages();
  // Forward: two Linear modules (each one addmm: the product with its bias), one relu, one loss.
  BOOST_TEST(row(stats, K::Op, "linear", "Float32").count == 2);
  BOOST_TEST(row(stats, K::Op, "addmm", "Float32").count == 2);
  BOOST_TEST(row(stats, K::Op, "relu", "Float32").count == 1);
  BOOST_TEST(row(stats, K::Op, "mse_loss", "Float32").count == 1);
  // Backward: one gradient accumulation per parameter (two weights, two biases).
  BOOST_TEST(row(stats, K::Backward, "AccumulateGrad", "Float32").count == 4);
  // One optimizer step over Float32 parameters.
  BOOST_TEST(row(stats, K::Optimizer, "SGD.step", "Float32").count == 1);
  // Fresh tensors were allocated along the way.
  BOOST_TEST(count_of_kind(prof.events(), K::Allocation) > 0);
  for (const auto& s : stats) {
    BOOST_TEST_CONTEXT(s.name) {
      BOOST_TEST(s.self_ns <= s.total_ns);
      BOOST_TEST(s.self_ns >= 0);
    }
  }
  // Outermost events do not overlap on one thread, so their total fits in the wall time.
  int64_t outermost = 0;
  for (const auto& e : prof.events()) {
    if (e.depth == 0 && e.thread == prof.events().front().thread) outermost += e.duration_ns;
  }
  BOOST_TEST(outermost <= prof.wall_ns());
}

// The backward of linear layers produces each weight's gradient in the weight's layout and
// AccumulateGrad takes it as it is: a step copies no gradient (before, every parameter's
// gradient was cloned, and the weights' through a strided transpose).
BOOST_AUTO_TEST_CASE(a_training_step_copies_no_gradient) {
  Mlp model;
  const Tensor x = amp::randn({16, 4});
  const Tensor target = amp::zeros({16, 2});
  const Tensor loss = F::mse_loss(model(x), target);
  pr::profile prof;
  loss.backward();
  prof.stop();
  const auto stats = prof.key_averages();
  BOOST_TEST(row(stats, pr::EventKind::Backward, "AccumulateGrad", "Float32").count == 4);
  BOOST_TEST(row(stats, pr::EventKind::Op, "clone", "Float32").count == 0);
  BOOST_TEST(row(stats, pr::EventKind::Op, "copy_", "Float32").count == 0);
  for (const auto& p : model.parameters()) BOOST_TEST(p.grad().is_contiguous());
}

BOOST_AUTO_TEST_CASE(casts_and_dtypes_get_their_own_rows) {
  const Tensor a = amp::ones({8});
  pr::profile prof;
  const Tensor h = a.to(DType::Float16);
  amp::add(a, a);
  amp::add(h, h);
  amp::add(h, h);
  a.to(DType::Float32);  // same dtype: no copy, no event
  prof.stop();
  using K = pr::EventKind;
  const auto stats = prof.key_averages();
  BOOST_TEST(row(stats, K::Cast, "to", "Float32->Float16").count == 1);
  BOOST_TEST(row(stats, K::Op, "add", "Float32").count == 1);
  BOOST_TEST(row(stats, K::Op, "add", "Float16").count == 2);
  int64_t casts = 0;
  for (const auto& s : stats) casts += s.kind == K::Cast ? s.count : 0;
  BOOST_TEST(casts == 1);
}

BOOST_AUTO_TEST_CASE(self_time_is_total_minus_the_directly_nested_events) {
  pr::profile prof;
  {
    pr::record_function outer("outer");
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    {
      pr::record_function inner("inner");
      std::this_thread::sleep_for(std::chrono::milliseconds(6));
    }
  }
  prof.stop();
  const auto& events = prof.events();
  BOOST_TEST_REQUIRE(events.size() == 2u);
  const pr::Event& inner = events[0];  // events are in the order they ended
  const pr::Event& outer = events[1];
  BOOST_TEST(inner.name == "inner");
  BOOST_TEST(outer.name == "outer");
  BOOST_TEST((outer.kind == pr::EventKind::User));
  BOOST_TEST(inner.depth == outer.depth + 1);
  BOOST_TEST(inner.self_ns == inner.duration_ns);
  BOOST_TEST(outer.self_ns == outer.duration_ns - inner.duration_ns);
  BOOST_TEST(inner.duration_ns >= 6'000'000);
  BOOST_TEST(outer.self_ns >= 4'000'000);
  BOOST_TEST(inner.start_ns >= outer.start_ns);
  BOOST_TEST(inner.start_ns + inner.duration_ns <= outer.start_ns + outer.duration_ns);
}

BOOST_AUTO_TEST_CASE(nothing_is_recorded_outside_a_profile) {
  const Tensor a = amp::ones({4});
  amp::add(a, a);  // before
  pr::profile prof;
  BOOST_TEST(pr::is_enabled());
  amp::mul(a, a);
  prof.stop();
  BOOST_TEST(!pr::is_enabled());
  amp::sub(a, a);  // after
  const auto stats = prof.key_averages();
  BOOST_TEST(row(stats, pr::EventKind::Op, "mul", "Float32").count == 1);
  BOOST_TEST(row(stats, pr::EventKind::Op, "add", "Float32").count == 0);
  BOOST_TEST(row(stats, pr::EventKind::Op, "sub", "Float32").count == 0);
}

BOOST_AUTO_TEST_CASE(events_of_each_thread_carry_their_thread) {
  const Tensor a = amp::ones({4});
  pr::profile prof;
  amp::add(a, a);
  std::thread other([&] { amp::mul(a, a); });
  other.join();
  prof.stop();
  int add_thread = -1, mul_thread = -1;
  for (const auto& e : prof.events()) {
    if (e.name == "add") add_thread = e.thread;
    if (e.name == "mul") mul_thread = e.thread;
  }
  BOOST_TEST(add_thread >= 0);
  BOOST_TEST(mul_thread >= 0);
  BOOST_TEST(add_thread != mul_thread);
}

BOOST_AUTO_TEST_CASE(the_table_lists_rows_by_self_time_and_the_totals) {
  const Tensor a = amp::ones({64, 64});
  pr::profile prof;
  for (int i = 0; i < 3; ++i) amp::mm(a, a);
  prof.stop();
  const std::string table = prof.table();
  BOOST_TEST(table.find("kind") == 0u);
  BOOST_TEST(table.find("mm") != std::string::npos);
  BOOST_TEST(table.find("wall time") != std::string::npos);
  BOOST_TEST(table.find("% from the cache") != std::string::npos);
  const auto stats = prof.key_averages();
  for (size_t i = 1; i < stats.size(); ++i) BOOST_TEST(stats[i - 1].self_ns >= stats[i].self_ns);
  const auto by_count = prof.key_averages(pr::SortBy::Count);
  for (size_t i = 1; i < by_count.size(); ++i)
    BOOST_TEST(by_count[i - 1].count >= by_count[i].count);
  // A row limit keeps the first rows and says how many were left out.
  const std::string one = prof.table(pr::SortBy::SelfTime, 1);
  BOOST_TEST(one.find("more rows)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_chrome_trace_is_json_with_one_complete_event_per_event) {
  const Tensor a = amp::ones({16, 16});
  pr::profile prof;
  {
    pr::record_function r("quote \" and \\ backslash");
    amp::mm(a, a);
  }
  prof.stop();
  const auto path = std::filesystem::temp_directory_path() / "ampcpp_profiler_trace.json";
  prof.export_chrome_trace(path.string());
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  const auto& events = trace.at("traceEvents");
  BOOST_TEST_REQUIRE(events.size() == prof.events().size());
  bool found_user = false;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const pr::Event& recorded = prof.events()[i];
    BOOST_TEST(e.at("ph") == "X");
    BOOST_TEST(e.at("name") == recorded.name);
    BOOST_TEST(e.at("cat") == pr::kind_name(recorded.kind));
    BOOST_TEST(e.at("ts").get<double>() == recorded.start_ns / 1e3,
               boost::test_tools::tolerance(1e-3));
    BOOST_TEST(e.at("dur").get<double>() >= 0.0);
    found_user = found_user || e.at("name") == "quote \" and \\ backslash";
  }
  BOOST_TEST(found_user);
}

const pr::Event& event_named(const std::vector<pr::Event>& events, const std::string& name) {
  for (const auto& e : events) {
    if (e.name == name) return e;
  }
  BOOST_FAIL("no event named " << name);
  return events.front();
}

BOOST_AUTO_TEST_CASE(a_scope_ended_out_of_order_is_recorded_and_leaves_the_stack_sound) {
  pr::profile prof;
  auto outer = std::make_unique<pr::record_function>("outer");
  auto inner = std::make_unique<pr::record_function>("inner");
  outer.reset();  // ends while "inner", opened inside it, is still open
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  inner.reset();
  { pr::record_function after("after"); }  // nothing is open any more
  prof.stop();
  const auto& events = prof.events();
  BOOST_TEST_REQUIRE(events.size() == 3u);
  const pr::Event& o = event_named(events, "outer");
  const pr::Event& i = event_named(events, "inner");
  const pr::Event& a = event_named(events, "after");
  BOOST_TEST(o.depth == 0);
  BOOST_TEST(i.depth == 1);
  BOOST_TEST(a.depth == 0);
  BOOST_TEST(o.self_ns == o.duration_ns);  // inner had not ended inside it
  BOOST_TEST(i.self_ns == i.duration_ns);
  BOOST_TEST(a.self_ns == a.duration_ns);
  BOOST_TEST(i.duration_ns >= 2'000'000);
}

BOOST_AUTO_TEST_CASE(a_scope_ended_on_another_thread_keeps_the_thread_that_opened_it) {
  pr::profile prof;
  auto handed = std::make_unique<pr::record_function>("handed over");
  std::thread other([&] {
    handed.reset();
    pr::record_function own("other thread");
  });
  other.join();
  {
    pr::record_function outer("main again");
    pr::record_function inner("nested");
  }
  prof.stop();
  const auto& events = prof.events();
  BOOST_TEST_REQUIRE(events.size() == 4u);
  const pr::Event& h = event_named(events, "handed over");
  const pr::Event& o = event_named(events, "other thread");
  const pr::Event& m = event_named(events, "main again");
  const pr::Event& n = event_named(events, "nested");
  BOOST_TEST(h.thread == m.thread);
  BOOST_TEST(o.thread != m.thread);
  BOOST_TEST(h.depth == 0);
  BOOST_TEST(o.depth == 0);
  BOOST_TEST(m.depth == 0);
  BOOST_TEST(n.depth == 1);
  BOOST_TEST(m.self_ns == m.duration_ns - n.duration_ns);
}

BOOST_AUTO_TEST_CASE(names_of_any_length_fit_the_table) {
  const std::string name = std::string(1000, 'x') + "<end of a long name>";
  pr::profile prof;
  { pr::record_function r(name); }
  prof.stop();
  const std::string table = prof.table();
  const size_t at = table.find(name);
  BOOST_TEST_REQUIRE(at != std::string::npos);
  // The row goes on to the count column after the whole name; every table line is as wide.
  const size_t row_end = table.find('\n', at);
  const size_t row_start = table.rfind('\n', at) + 1;
  const std::string row_text = table.substr(row_start, row_end - row_start);
  BOOST_TEST(row_text.find("user") == 0u);
  BOOST_TEST(row_text.find("         1  ") != std::string::npos);
  const size_t header_end = table.find('\n');
  BOOST_TEST(row_text.size() == header_end);
}

BOOST_AUTO_TEST_CASE(names_that_are_not_utf8_give_valid_json_with_replacement_characters) {
  const std::string fffd = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
  const std::vector<std::pair<std::string, std::string>> names = {
      {"bad \xFF byte", "bad " + fffd + " byte"},
      {"cut \xC3", "cut " + fffd},                                             // truncated sequence
      {"surrogate \xED\xA0\x80", "surrogate " + fffd + fffd + fffd},           // U+D800
      {"overlong \xC0\xAF", "overlong " + fffd + fffd},                        // '/' in two bytes
      {"too high \xF4\x90\x80\x80", "too high " + fffd + fffd + fffd + fffd},  // U+110000
      {"valid \xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80",
       "valid \xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80"},
      {"control \x01 tab \t", "control \x01 tab \t"},
  };
  pr::profile prof;
  for (const auto& [raw, shown] : names) pr::record_function r(raw);
  prof.stop();
  const auto path = std::filesystem::temp_directory_path() / "ampcpp_profiler_utf8.json";
  prof.export_chrome_trace(path.string());
  std::ifstream in(path);
  nlohmann::json trace;
  BOOST_CHECK_NO_THROW(trace = nlohmann::json::parse(in));  // strict: rejects invalid UTF-8
  std::filesystem::remove(path);
  const auto& events = trace.at("traceEvents");
  BOOST_TEST_REQUIRE(events.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    BOOST_TEST(events[i].at("name").get<std::string>() == names[i].second, "name " << i);
  }
  // The events themselves keep the bytes they were given.
  BOOST_TEST(prof.events()[0].name == names[0].first);
}

BOOST_AUTO_TEST_CASE(misuse_raises) {
  pr::profile prof;
  amp_test::check_error([] { pr::profile second; },
                        {"profiler::profile", "expected no other profile recording"});
  amp_test::check_error([&] { prof.table(); },
                        {"profiler::profile::table", "expected a stopped profile"});
  amp_test::check_error([&] { prof.events(); }, {"profiler::profile::events"});
  prof.stop();
  prof.stop();  // a second stop does nothing
  BOOST_TEST(!prof.is_recording());
  amp_test::check_error([&] { prof.export_chrome_trace("/nonexistent/dir/trace.json"); },
                        {"export_chrome_trace", "/nonexistent/dir/trace.json"});
  // A new profile may start once the first has stopped.
  pr::profile next;
  BOOST_TEST(next.is_recording());
}

BOOST_AUTO_TEST_SUITE_END()
