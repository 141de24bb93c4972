// The profiler's recording (one process-wide sink guarded by a mutex, a per-thread stack of open
// scopes for self times) and its reports: per-op totals, the text table, Chrome-trace JSON.
#include "csrc/core/profiler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
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
std::atomic<uint64_t> g_next_scope_id{1};

}  // namespace

namespace detail {

// The scopes a thread opened and that have not ended yet, innermost last. A scope keeps its
// thread's list alive and ends through it, so a scope that ends out of order or on another thread
// finds its own entry (by id) instead of writing through a pointer to a scope already gone.
struct ThreadScopes {
  struct Open {
    uint64_t id;
    int depth;
    int64_t children_ns;  // durations of the events that ended directly inside it
  };
  std::mutex mutex;
  std::vector<Open> open;
  int thread = 0;
};

}  // namespace detail

namespace {

const std::shared_ptr<detail::ThreadScopes>& this_thread_scopes() {
  thread_local const std::shared_ptr<detail::ThreadScopes> scopes = [] {
    auto s = std::make_shared<detail::ThreadScopes>();
    s->thread = g_next_thread.fetch_add(1, std::memory_order_relaxed);
    return s;
  }();
  return scopes;
}

void push(Event&& event, int64_t absolute_start_ns) {
  std::lock_guard<std::mutex> lock(g_mutex);
  // An event that began before this profile started belongs to no profile.
  if (g_sink == nullptr || absolute_start_ns < g_start_ns) return;
  event.start_ns = absolute_start_ns - g_start_ns;
  g_sink->push_back(std::move(event));
}

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when the byte there starts none.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;  // overlong below U+0800
    if (lead == 0xED) second_max = 0x9F;  // surrogates U+D800-U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;  // overlong below U+10000
    if (lead == 0xF4) second_max = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (always overlong) or F5-FF
  }
  if (i + length > s.size() || byte(i + 1) < second_min || byte(i + 1) > second_max) return 0;
  for (size_t k = 2; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// A JSON string literal of `s`: quotes, backslashes and control characters escaped, and every
// byte that is not part of well-formed UTF-8 replaced by U+FFFD, so the file is always valid JSON
// (which must be UTF-8) whatever bytes a user's record_function name holds.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t length = utf8_sequence_length(s, i);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
      out += buffer;
    } else {
      out.append(s, i, length);
    }
    i += length;
  }
  return out + "\"";
}

// `s` padded with spaces to `width` bytes, on the right (left-aligned) or on the left.
std::string pad(const std::string& s, size_t width, bool left_aligned) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left_aligned ? s + fill : fill + s;
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
  detail::ThreadScopes& scopes = *this_thread_scopes();
  int depth = 0;
  {
    std::lock_guard<std::mutex> lock(scopes.mutex);
    if (!scopes.open.empty()) {
      scopes.open.back().children_ns += duration;
      depth = scopes.open.back().depth + 1;
    }
  }
  push(Event{.kind = kind,
             .name = std::move(name),
             .dtype = std::move(dtype),
             .duration_ns = duration,
             .self_ns = duration,
             .bytes = bytes,
             .thread = scopes.thread,
             .depth = depth},
       start_ns);
}

void RecordScope::begin(EventKind kind, std::string name, std::string dtype) {
  kind_ = kind;
  name_ = std::move(name);
  dtype_ = std::move(dtype);
  scopes_ = this_thread_scopes();
  id_ = g_next_scope_id.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(scopes_->mutex);
    const int depth = scopes_->open.empty() ? 0 : scopes_->open.back().depth + 1;
    scopes_->open.push_back({id_, depth, 0});
  }
  active_ = true;
  start_ns_ = now_ns();
}

void RecordScope::end() {
  const int64_t duration = now_ns() - start_ns_;
  active_ = false;
  int depth = 0;
  int64_t children_ns = 0;
  {
    std::lock_guard<std::mutex> lock(scopes_->mutex);
    auto& open = scopes_->open;
    // Usually the last entry; one further down when scopes opened after it are still open. The
    // scope enclosing it is the entry below, if still open.
    const auto it =
        std::find_if(open.begin(), open.end(), [this](const auto& o) { return o.id == id_; });
    if (it == open.end()) return;  // cannot happen: only end() removes what begin() added
    depth = it->depth;
    children_ns = it->children_ns;
    if (it != open.begin()) std::prev(it)->children_ns += duration;
    open.erase(it);
  }
  push(Event{.kind = kind_,
             .name = std::move(name_),
             .dtype = std::move(dtype_),
             .duration_ns = duration,
             .self_ns = duration - children_ns,
             .thread = scopes_->thread,
             .depth = depth},
       start_ns_);
  scopes_.reset();
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
  // No fixed-size buffer: names and dtype labels of any length widen their columns.
  const auto line = [&](const std::string& kind, const std::string& name, const std::string& dtype,
                        const std::string& count, const std::string& self_ms,
                        const std::string& self_percent, const std::string& total_ms,
                        const std::string& avg_us, const std::string& bytes) {
    return pad(kind, 10, true) + "  " + pad(name, name_width, true) + "  " +
           pad(dtype, dtype_width, true) + "  " + pad(count, 8, false) + "  " +
           pad(self_ms, 10, false) + "  " + pad(self_percent, 7, false) + "  " +
           pad(total_ms, 10, false) + "  " + pad(avg_us, 10, false) + "  " + pad(bytes, 12, false);
  };
  const std::string header =
      line("kind", "name", "dtype", "count", "self ms", "self %", "total ms", "avg us", "bytes");
  out << header << "\n" << std::string(header.size(), '-') << "\n";
  size_t shown = 0;
  int64_t allocations = 0, cached_allocations = 0;
  for (const OpStats& s : rows) {
    if (s.kind == EventKind::Allocation) {
      allocations += s.count;
      if (s.name == "allocate (cached block)") cached_allocations += s.count;
    }
    if (row_limit != 0 && shown == row_limit) continue;
    ++shown;
    out << line(kind_name(s.kind), s.name, s.dtype, std::to_string(s.count),
                fixed(s.self_ns / 1e6, 3),
                fixed(100.0 * static_cast<double>(s.self_ns) / wall, 1) + "%",
                fixed(s.total_ns / 1e6, 3),
                fixed(s.total_ns / 1e3 / static_cast<double>(s.count), 1),
                s.bytes != 0 ? std::to_string(s.bytes) : "")
        << "\n";
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
