// The profiler's recording (one process-wide sink guarded by a mutex, a per-thread stack of open
// scopes for self times) and its reports: per-op totals, the text table, Chrome-trace JSON.
#include "csrc/core/profiler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "csrc/core/macros.h"

namespace amp::profiler {

namespace detail {
std::atomic<bool> g_recording{false};
}  // namespace detail

namespace {

// The recording profile's event list and start time; null when none records.
std::mutex g_mutex;
std::vector<Event>* g_sink = nullptr;
int64_t g_start_ns = 0;

std::atomic<int> g_next_thread{0};
thread_local int t_thread = -1;
// The innermost open scope of this thread that is recording (its parent chain is the stack).
thread_local RecordScope* t_current = nullptr;

int thread_index() {
  if (t_thread < 0) t_thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
  return t_thread;
}

void push(Event&& event, int64_t absolute_start_ns) {
  std::lock_guard<std::mutex> lock(g_mutex);
  // An event that began before this profile started belongs to no profile.
  if (g_sink == nullptr || absolute_start_ns < g_start_ns) return;
  event.start_ns = absolute_start_ns - g_start_ns;
  g_sink->push_back(std::move(event));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace

const char* kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::Op:
      return "op";
    case EventKind::Backward:
      return "backward";
    case EventKind::Optimizer:
      return "optimizer";
    case EventKind::Cast:
      return "cast";
    case EventKind::Allocation:
      return "allocation";
    case EventKind::User:
      return "user";
  }
  return "?";
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_complete(EventKind kind, std::string name, std::string dtype, int64_t start_ns,
                     int64_t bytes) {
  if (!is_enabled()) return;
  const int64_t duration = now_ns() - start_ns;
  Event event{.kind = kind,
              .name = std::move(name),
              .dtype = std::move(dtype),
              .duration_ns = duration,
              .self_ns = duration,
              .bytes = bytes,
              .thread = thread_index(),
              .depth = 0};
  if (t_current != nullptr) {
    t_current->children_ns_ += duration;
    event.depth = t_current->depth_ + 1;
  }
  push(std::move(event), start_ns);
}

void RecordScope::begin(EventKind kind, std::string name, std::string dtype) {
  active_ = true;
  kind_ = kind;
  name_ = std::move(name);
  dtype_ = std::move(dtype);
  parent_ = t_current;
  depth_ = parent_ != nullptr ? parent_->depth_ + 1 : 0;
  t_current = this;
  start_ns_ = now_ns();
}

void RecordScope::end() {
  const int64_t duration = now_ns() - start_ns_;
  t_current = parent_;
  if (parent_ != nullptr) parent_->children_ns_ += duration;
  push(Event{.kind = kind_,
             .name = std::move(name_),
             .dtype = std::move(dtype_),
             .duration_ns = duration,
             .self_ns = duration - children_ns_,
             .thread = thread_index(),
             .depth = depth_},
       start_ns_);
}

record_function::record_function(const std::string& name) : scope_(EventKind::User, name) {}

profile::profile() {
  std::lock_guard<std::mutex> lock(g_mutex);
  AMP_CHECK(g_sink == nullptr,
            "profiler::profile: expected no other profile recording, got one already recording "
            "(stop it first)");
  start_ns_ = now_ns();
  g_start_ns = start_ns_;
  g_sink = &events_;
  detail::g_recording.store(true, std::memory_order_relaxed);
}

profile::~profile() { stop(); }

void profile::stop() {
  if (!recording_) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  detail::g_recording.store(false, std::memory_order_relaxed);
  g_sink = nullptr;
  wall_ns_ = now_ns() - start_ns_;
  recording_ = false;
}

void profile::check_stopped(const char* op) const {
  AMP_CHECK(!recording_, "profiler::profile::", op,
            ": expected a stopped profile, got one still recording (call stop() first)");
}

const std::vector<Event>& profile::events() const {
  check_stopped("events");
  return events_;
}

std::vector<OpStats> profile::key_averages(SortBy sort) const {
  check_stopped("key_averages");
  std::map<std::tuple<int, std::string, std::string>, OpStats> groups;
  for (const Event& e : events_) {
    OpStats& s = groups[{static_cast<int>(e.kind), e.name, e.dtype}];
    s.kind = e.kind;
    s.name = e.name;
    s.dtype = e.dtype;
    ++s.count;
    s.total_ns += e.duration_ns;
    s.self_ns += e.self_ns;
    s.bytes += e.bytes;
  }
  std::vector<OpStats> out;
  out.reserve(groups.size());
  for (auto& [key, stats] : groups) out.push_back(std::move(stats));
  const auto value = [sort](const OpStats& s) {
    switch (sort) {
      case SortBy::TotalTime:
        return s.total_ns;
      case SortBy::Count:
        return s.count;
      case SortBy::SelfTime:
        break;
    }
    return s.self_ns;
  };
  // Stable: ties keep the (kind, name, dtype) order, so the table is deterministic.
  std::stable_sort(out.begin(), out.end(),
                   [&](const OpStats& a, const OpStats& b) { return value(a) > value(b); });
  return out;
}

std::string profile::table(SortBy sort, size_t row_limit) const {
  check_stopped("table");
  const std::vector<OpStats> rows = key_averages(sort);
  size_t name_width = 4, dtype_width = 5;
  for (const OpStats& s : rows) {
    name_width = std::max(name_width, s.name.size());
    dtype_width = std::max(dtype_width, s.dtype.size());
  }
  const double wall = wall_ns_ > 0 ? static_cast<double>(wall_ns_) : 1.0;
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-10s  %-*s  %-*s  %8s  %10s  %7s  %10s  %10s  %12s\n", "kind",
                static_cast<int>(name_width), "name", static_cast<int>(dtype_width), "dtype",
                "count", "self ms", "self %", "total ms", "avg us", "bytes");
  out << line << std::string(std::strlen(line) - 1, '-') << "\n";
  size_t shown = 0;
  int64_t allocations = 0, cached_allocations = 0;
  for (const OpStats& s : rows) {
    if (s.kind == EventKind::Allocation) {
      allocations += s.count;
      if (s.name == "allocate (cached block)") cached_allocations += s.count;
    }
    if (row_limit != 0 && shown == row_limit) continue;
    ++shown;
    std::snprintf(line, sizeof line, "%-10s  %-*s  %-*s  %8lld  %10s  %6s%%  %10s  %10s  %12s\n",
                  kind_name(s.kind), static_cast<int>(name_width), s.name.c_str(),
                  static_cast<int>(dtype_width), s.dtype.c_str(), static_cast<long long>(s.count),
                  fixed(s.self_ns / 1e6, 3).c_str(),
                  fixed(100.0 * static_cast<double>(s.self_ns) / wall, 1).c_str(),
                  fixed(s.total_ns / 1e6, 3).c_str(),
                  fixed(s.total_ns / 1e3 / static_cast<double>(s.count), 1).c_str(),
                  s.bytes != 0 ? std::to_string(s.bytes).c_str() : "");
    out << line;
  }
  if (shown < rows.size()) out << "(" << rows.size() - shown << " more rows)\n";
  out << "wall time " << fixed(wall_ns_ / 1e6, 3) << " ms, " << events_.size() << " events";
  if (allocations > 0) {
    out << ", " << allocations << " allocations ("
        << fixed(100.0 * static_cast<double>(cached_allocations) / static_cast<double>(allocations),
                 1)
        << "% from the cache)";
  }
  out << "\n";
  return out.str();
}

void profile::export_chrome_trace(const std::string& path) const {
  check_stopped("export_chrome_trace");
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  AMP_CHECK(file.is_open(),
            "profiler::profile::export_chrome_trace: expected a writable file, got '", path,
            "': ", std::strerror(errno));
  file << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    file << "{\"name\": " << json_string(e.name) << ", \"cat\": \"" << kind_name(e.kind)
         << "\", \"ph\": \"X\", \"ts\": " << fixed(e.start_ns / 1e3, 3)
         << ", \"dur\": " << fixed(e.duration_ns / 1e3, 3) << ", \"pid\": 0, \"tid\": " << e.thread
         << ", \"args\": {\"dtype\": " << json_string(e.dtype) << ", \"bytes\": " << e.bytes << "}}"
         << (i + 1 < events_.size() ? ",\n" : "\n");
  }
  file << "]}\n";
  file.flush();
  AMP_CHECK(file.good(), "profiler::profile::export_chrome_trace: expected to write '", path,
            "', got a write error: ", std::strerror(errno));
}

}  // namespace amp::profiler
