/// \file
/// amp::profiler: where a training step's time goes. A `profile` object records, while it lives,
/// every forward op, backward node, optimizer step and multi-tensor kernel, dtype conversion and
/// allocation with its thread, start and duration (CPU wall time), as torch.profiler's core does.
/// Afterwards it gives per-op averages (count, total and self time, grouped by kind, name and
/// dtype), a table sorted by time, and a Chrome-trace JSON file for a browser's trace viewer.
///
/// \code
///   amp::profiler::profile prof;
///   train_step();
///   prof.stop();
///   std::cout << prof.table();                       // sorted by self time
///   prof.export_chrome_trace("step.trace.json");     // chrome://tracing or ui.perfetto.dev
/// \endcode
///
/// When no profile records, each instrumented call costs one relaxed atomic load and a branch.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "csrc/core/export.h"

namespace amp::profiler {

/// What an event measures; the table groups and the trace colours by it.
enum class EventKind {
  Op,          ///< a forward op (add, mm, linear, cross_entropy, ...), including its casts
  Backward,    ///< a backward node of the autograd graph (AddmmBackward, AccumulateGrad, ...)
  Optimizer,   ///< an optimizer's step or a multi-tensor kernel (unscale, adam, sgd, ...)
  Cast,        ///< a dtype or device conversion that copies (Tensor::to)
  Allocation,  ///< a caching-allocator allocation (cached block or new system block)
  User,        ///< a region named with record_function
};

/// "op", "backward", "optimizer", "cast", "allocation", "user".
AMPCPP_API const char* kind_name(EventKind kind);

/// One recorded call. Times are nanoseconds from the profile's start.
struct AMPCPP_API Event {
  EventKind kind = EventKind::Op;  ///< what was measured
  std::string name;                ///< the op, node, step or region ("mm", "MmBackward", ...)
  std::string dtype;               ///< e.g. "Float16", "Float32->Float16" for a cast; "" when none
  int64_t start_ns = 0;            ///< from the profile's start
  int64_t duration_ns = 0;         ///< wall time of the call, nested events included
  int64_t self_ns = 0;             ///< duration minus the events nested directly inside it
  int64_t bytes = 0;               ///< allocations: the bytes asked for
  int thread = 0;                  ///< 0 for the first thread that recorded, 1 for the next, ...
  int depth = 0;                   ///< nesting level within its thread (0: outermost)
};

/// Totals of the events sharing kind, name and dtype.
struct AMPCPP_API OpStats {
  EventKind kind = EventKind::Op;  ///< as Event::kind
  std::string name;                ///< as Event::name
  std::string dtype;               ///< as Event::dtype
  int64_t count = 0;               ///< events in the group
  int64_t total_ns = 0;            ///< sum of their durations
  int64_t self_ns = 0;             ///< sum of their self times
  int64_t bytes = 0;               ///< sum of their bytes (allocations)
};

/// The order of key_averages() and table(): largest first.
enum class SortBy {
  SelfTime,   ///< by self_ns
  TotalTime,  ///< by total_ns
  Count,      ///< by count
};

/// Records while alive (or until stop()). One profile records at a time in the process; events
/// come from every thread that calls into the library.
class AMPCPP_API profile {
 public:
  /// Starts recording. amp::Error when another profile is recording.
  profile();
  /// Stops recording if still recording.
  ~profile();
  profile(const profile&) = delete;
  profile& operator=(const profile&) = delete;

  /// Stops recording; later calls do nothing.
  void stop();
  bool is_recording() const { return recording_; }  ///< false after stop()

  /// The recorded events in the order they ended. amp::Error while recording.
  const std::vector<Event>& events() const;
  /// Per (kind, name, dtype) totals, sorted as `sort`. amp::Error while recording.
  std::vector<OpStats> key_averages(SortBy sort = SortBy::SelfTime) const;
  /// key_averages as a text table (count, self and total ms, % of the profiled wall time, average
  /// µs, bytes), `row_limit` rows at most (0: all), followed by the wall time and the caching
  /// allocator's hit rate. amp::Error while recording.
  std::string table(SortBy sort = SortBy::SelfTime, size_t row_limit = 0) const;
  /// Writes the events as Chrome-trace JSON ("X" events, microseconds) to `path`. amp::Error
  /// while recording or when the file cannot be written.
  void export_chrome_trace(const std::string& path) const;
  /// Wall time from construction to stop().
  int64_t wall_ns() const { return wall_ns_; }

 private:
  void check_stopped(const char* op) const;

  bool recording_ = true;
  int64_t start_ns_ = 0;
  int64_t wall_ns_ = 0;
  std::vector<Event> events_;
};

namespace detail {
AMPCPP_API extern std::atomic<bool> g_recording;
struct ThreadScopes;  // the open scopes of one thread (csrc/core/profiler.cpp)
}  // namespace detail

/// Whether a profile is recording now.
inline bool is_enabled() { return detail::g_recording.load(std::memory_order_relaxed); }

/// Nanoseconds of a steady clock (the profiler's time base).
AMPCPP_API int64_t now_ns();

/// Records one event that the caller timed itself (start from now_ns()); nothing when no
/// profile is recording.
AMPCPP_API void record_complete(EventKind kind, std::string name, std::string dtype,
                                int64_t start_ns, int64_t bytes = 0);

/// Times the enclosing scope as one event when a profile is recording at construction. `name`
/// is a string or a callable returning one, and `dtype` a callable returning the dtype label;
/// the callables run only when recording, so a scope costs a branch when off. A scope may end
/// out of order (a scope held in a std::optional or unique_ptr) or on another thread than the one
/// that opened it: the event keeps the opening thread and depth, and its duration counts as a
/// child's of the scope enclosing it when it ends, if that one is still open.
///
///   profiler::RecordScope scope(profiler::EventKind::Op, "mm", [&] { return dtype_name(a); });
///   profiler::RecordScope scope(profiler::EventKind::Backward, [&] { return node.name(); });
class AMPCPP_API RecordScope {
 public:
  /// Opens an event of `kind` named `name` with the dtype label `dtype()`, if recording.
  template <class Name, class DTypeLabel>
  RecordScope(EventKind kind, Name&& name, DTypeLabel&& dtype) {
    if (is_enabled()) [[unlikely]]
      begin(kind, resolve(name), std::string(dtype()));
  }
  /// Opens an event without a dtype label, if recording.
  template <class Name>
  RecordScope(EventKind kind, Name&& name) {
    if (is_enabled()) [[unlikely]]
      begin(kind, resolve(name), std::string());
  }
  ~RecordScope() {
    if (active_) [[unlikely]]
      end();
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  template <class Name>
  static std::string resolve(Name& name) {
    if constexpr (std::is_invocable_v<Name&>) {
      return std::string(name());
    } else {
      return std::string(name);
    }
  }
  void begin(EventKind kind, std::string name, std::string dtype);
  void end();

  bool active_ = false;
  EventKind kind_ = EventKind::Op;
  uint64_t id_ = 0;  // this scope's entry in its opening thread's open scopes
  std::shared_ptr<detail::ThreadScopes> scopes_;
  int64_t start_ns_ = 0;
  std::string name_, dtype_;
};

/// A user-named region, as torch.profiler.record_function: shows in the table and the trace as
/// kind "user".
///
///   { amp::profiler::record_function r("data loading"); batch = next(loader); }
class AMPCPP_API record_function {
 public:
  /// Opens a `user` event named `name` until destruction, if a profile records.
  explicit record_function(const std::string& name);
  record_function(const record_function&) = delete;
  record_function& operator=(const record_function&) = delete;

 private:
  RecordScope scope_;
};

}  // namespace amp::profiler
