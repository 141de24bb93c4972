// amp_compare's progress lines: one per run, redrawn in place with \r on a terminal, or a plain
// line at every tenth of a run when stdout is a file or a pipe (logs stay readable); nothing at
// all when quiet.
//
//   [2/7] apex O1 fp16  epoch 1/2  step 120/470  ETA 0:12  loss 0.4123  scale 65536  5230 samples/s
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "examples/compare/runs.h"

namespace amp::compare {

class Progress {
 public:
  enum class Mode { Terminal, Plain, Quiet };
  // `runs`: how many runs the comparison has (the "/7" of "[2/7]").
  Progress(std::ostream& out, Mode mode, int runs);

  void start_run(const RunSpec& spec, int64_t steps, int64_t epochs);
  // After step `step` (1-based, counted over the whole run) of epoch `epoch` (1-based).
  void step(int64_t epoch, int64_t step, int64_t samples, double loss, double loss_scale);
  // The run's closing line (terminal: ends the redrawn line).
  void finish_run(const RunResult& result);

 private:
  using Clock = std::chrono::steady_clock;
  void write(const std::string& line);

  std::ostream& out_;
  Mode mode_;
  int runs_;
  int run_ = 0;
  int64_t steps_ = 0, epochs_ = 0;
  std::string label_;
  Clock::time_point start_, last_draw_;
  size_t drawn_width_ = 0;  // the terminal line's length, to blank what a shorter one leaves
  // A redrawn line longer than the terminal wraps, and \r then redraws only its last part; it
  // is cut to this many characters (0: the width is unknown, no cut).
  size_t max_width_ = 0;
};

// Terminal when stdout is a terminal, Plain otherwise, Quiet when quiet.
Progress::Mode progress_mode_for_stdout(bool quiet);

}  // namespace amp::compare
