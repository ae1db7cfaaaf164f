// A run's progress: every --log-every steps, at the last planned step and at each --eval-every evaluation, rank 0
// prints one line (epoch, step, loss, examples per second of all ranks in the task's unit, data-wait share,
// DDP's exposed communication, the --amp state, the MFU, the evaluation, ETA) and appends the step's
// metrics to --log-file (tools/train/metrics_log.h: a "train" row, and an "eval" row after each evaluation,
// the final one included). Rates are those of the window since the previous line; time spent evaluating is
// left out of the run's throughput.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "tensor/allocator.h"

#include "tools/train/training_run.h"

namespace syncgrad::train {

class ProgressReport {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the run's clock; `memory` is the training device's allocator, whose peak the log shows.
  ProgressReport(const TrainingRun& run, const Allocator& memory);

  // After each micro-batch of `examples` examples (of this rank).
  void add_examples(int64_t examples);
  // After each optimizer step: counts it, with DDP's communication time.
  void add_step(const TrainingRun& run);
  // After each optimizer step: the progress line and log row, when one is due.
  void report_if_due(TrainingRun& run, int epoch);

  // The held-out evaluation after the last step (every rank calls it): the last progress line's when it
  // evaluated at this step, else a new one, logged as an "eval" row.
  Evaluation final_evaluation(TrainingRun& run);

  int64_t examples() const { return examples_; }  // of this rank, so far
  double training_seconds() const;                 // since the start, without the evaluations

 private:
  struct WindowRates;
  WindowRates measure(const TrainingRun& run) const;
  std::string comm_fields(double window_seconds) const;
  MetricsRow train_row(const TrainingRun& run, int epoch, double loss, const WindowRates& w) const;
  void report(TrainingRun& run, int epoch, bool evaluate_now);
  Evaluation evaluate_and_log(TrainingRun& run, int epoch);
  void start_window(const TrainingRun& run);

  const Allocator* memory_;
  Clock::time_point start_;
  Clock::time_point window_start_;
  double window_wait_start_ = 0;  // the loader's data-wait seconds at the window's start
  double window_comm_ = 0;        // DDP's reduction seconds in the window, and those backward waited for
  double window_exposed_ = 0;
  double evaluation_seconds_ = 0;  // periodic held-out evaluations, left out of the throughput
  int64_t examples_ = 0;
  int64_t window_examples_ = 0;
  int64_t window_steps_ = 0;
  int last_epoch_ = 1;  // of the last progress line, 1-based
  std::optional<std::pair<int64_t, Evaluation>> last_evaluation_;  // its step, and the evaluation
};

}  // namespace syncgrad::train
