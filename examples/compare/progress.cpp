#include "examples/compare/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace amp::compare {

namespace {

std::string format(const char* pattern, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

std::string minutes_seconds(double seconds) {
  const auto s = static_cast<long long>(std::lround(std::max(0.0, seconds)));
  return format("%lld:%02lld", s / 60, s % 60);
}

// Redraws on a terminal are limited to this rate: printing costs more than a small step.
constexpr std::chrono::milliseconds kRedrawInterval{100};
constexpr int64_t kPlainLinesPerRun = 10;

}  // namespace

Progress::Progress(std::ostream& out, Mode mode, int runs) : out_(out), mode_(mode), runs_(runs) {
  winsize size{};
  if (mode == Mode::Terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) {
    max_width_ = size.ws_col - 1u;
  }
}

Progress::Mode progress_mode_for_stdout(bool quiet) {
  if (quiet) return Progress::Mode::Quiet;
  return isatty(STDOUT_FILENO) ? Progress::Mode::Terminal : Progress::Mode::Plain;
}

void Progress::start_run(const RunSpec& spec, int64_t steps, int64_t epochs) {
  ++run_;
  steps_ = steps;
  epochs_ = epochs;
  label_ = format("[%d/%d] %s", run_, runs_, spec.label().c_str());
  start_ = Clock::now();
  last_draw_ = {};
  drawn_width_ = 0;
}

void Progress::step(int64_t epoch, int64_t step, int64_t samples, double loss, double loss_scale) {
  if (mode_ == Mode::Quiet) return;
  const Clock::time_point now = Clock::now();
  const bool last = step == steps_;
  if (mode_ == Mode::Terminal && !last && now - last_draw_ < kRedrawInterval) return;
  if (mode_ == Mode::Plain &&
      step * kPlainLinesPerRun / steps_ == (step - 1) * kPlainLinesPerRun / steps_) {
    return;
  }
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = elapsed / static_cast<double>(step) * static_cast<double>(steps_ - step);
  // The ETA comes early: on a narrow terminal the line's end is cut.
  write(format("%s  epoch %lld/%lld  step %lld/%lld  ETA %s  loss %.4f  scale %g  %.0f samples/s",
               label_.c_str(), static_cast<long long>(epoch), static_cast<long long>(epochs_),
               static_cast<long long>(step), static_cast<long long>(steps_),
               minutes_seconds(eta).c_str(), loss, loss_scale,
               elapsed > 0 ? static_cast<double>(samples) / elapsed : 0.0));
}

void Progress::finish_run(const RunResult& result) {
  if (mode_ == Mode::Quiet) return;
  if (mode_ == Mode::Terminal) out_ << "\n";
  out_ << format("%s  done: %lld steps in %.1f s, final loss %.4f, test accuracy %.2f%%",
                 label_.c_str(), static_cast<long long>(result.steps), result.train_seconds,
                 result.final_train_loss, 100 * result.test_accuracy)
       << std::endl;
}

void Progress::write(const std::string& line) {
  if (mode_ == Mode::Plain) {
    out_ << line << std::endl;
    return;
  }
  const std::string shown = max_width_ > 0 ? line.substr(0, max_width_) : line;
  out_ << '\r' << shown;
  if (shown.size() < drawn_width_) out_ << std::string(drawn_width_ - shown.size(), ' ');
  out_ << std::flush;
  drawn_width_ = shown.size();
}

}  // namespace amp::compare
