// Progress lines and metrics-log rows (see progress_report.h).
#include "tools/train/progress_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/train/evaluation.h"
#include "tools/train/peak_rss.h"

namespace syncgrad::train {
namespace {

double seconds_since(ProgressReport::Clock::time_point start) {
  return std::chrono::duration<double>(ProgressReport::Clock::now() - start).count();
}

// "m:ss"
std::string format_duration(double seconds) {
  long s = std::lround(seconds);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  return buffer;
}

// "  amp fp16 scale 65536 skipped 0" or "  amp bf16"; nothing without --amp.
std::string amp_fields(const TrainingRun& run) {
  if (run.config.amp == AmpMode::kOff) return {};
  char precision[80];
  if (run.scaler.is_enabled()) {
    std::snprintf(precision, sizeof precision, "  amp fp16 scale %g skipped %lld", run.scaler.get_scale(),
                  static_cast<long long>(run.scaler.skipped_steps()));
  } else {
    std::snprintf(precision, sizeof precision, "  amp %s", to_string(run.config.amp).c_str());
  }
  return precision;
}

}  // namespace

struct ProgressReport::WindowRates {
  double seconds = 0;       // the window's
  double rate = 0;          // examples per second, all ranks
  double wait_percent = 0;  // of the window spent waiting for batches
  double elapsed = 0;       // since the start of the run
  double eta = 0;           // seconds to the last planned step
};

ProgressReport::ProgressReport(const TrainingRun& run, const Allocator& memory)
    : memory_(&memory), start_(Clock::now()), window_start_(start_), last_epoch_(run.position.epoch + 1) {}

void ProgressReport::add_examples(int64_t examples) {
  examples_ += examples;
  window_examples_ += examples;
}

void ProgressReport::add_step(const TrainingRun& run) {
  ++window_steps_;
  if (run.ddp) {
    window_comm_ += run.ddp->last_stats().comm_seconds;
    window_exposed_ += run.ddp->last_stats().exposed_seconds;
  }
}

void ProgressReport::report_if_due(TrainingRun& run, int epoch) {
  const TrainConfig& c = run.config;
  const int64_t step = run.position.step;
  const bool evaluate_now = c.eval_every > 0 && step % c.eval_every == 0;
  if (step % c.log_every == 0 || step == run.planned_steps || evaluate_now) report(run, epoch, evaluate_now);
}

double ProgressReport::training_seconds() const { return seconds_since(start_) - evaluation_seconds_; }

ProgressReport::WindowRates ProgressReport::measure(const TrainingRun& run) const {
  const TrainConfig& c = run.config;
  WindowRates w;
  w.seconds = seconds_since(window_start_);
  w.rate = w.seconds > 0 ? window_examples_ * run.world / w.seconds : 0;
  w.wait_percent = w.seconds > 0 ? 100.0 * (run.loader->data_wait_seconds() - window_wait_start_) / w.seconds : 0;
  w.elapsed = seconds_since(start_);
  const double examples_per_step = static_cast<double>(c.batch_size * c.accumulate * run.world);
  w.eta = w.rate > 0 ? (run.planned_steps - run.position.step) * examples_per_step / w.rate : 0;
  return w;
}

// Exposed communication: the share of the window backward's end spent waiting for reductions; the rest of the
// reductions' time ran hidden behind backward (overlap).
std::string ProgressReport::comm_fields(double window) const {
  const double overlapped = window_comm_ > 0 ? 100.0 * (1.0 - std::min(1.0, window_exposed_ / window_comm_)) : 0;
  char comm[120];
  std::snprintf(comm, sizeof comm, "  comm exposed %.1f%% (%.0f%% of %.1f ms/step hidden)",
                100.0 * window_exposed_ / window, overlapped, 1e3 * window_comm_ / std::max<int64_t>(1, window_steps_));
  return comm;
}

MetricsRow ProgressReport::train_row(const TrainingRun& run, int epoch, double loss, const WindowRates& w) const {
  MetricsRow row;
  row.step = run.position.step;
  row.epoch = epoch + 1;
  row.elapsed_seconds = w.elapsed;
  row.loss = loss;
  row.lr = run.optimizer->lr();
  row.samples_per_second = w.rate;
  if (run.task->rate_unit() == "tokens") row.tokens_per_second = w.rate * run.task->units_per_example();
  row.data_wait_percent = w.wait_percent;
  if (run.scaler.is_enabled()) {
    row.loss_scale = run.scaler.get_scale();
    row.skipped_steps = run.scaler.skipped_steps();
  }
  row.mfu_percent = run.mfu.percent(w.rate);
  if (run.ddp && window_steps_ > 0 && w.seconds > 0) {
    row.comm_ms_per_step = 1e3 * window_comm_ / static_cast<double>(window_steps_);
    row.exposed_comm_ms_per_step = 1e3 * window_exposed_ / static_cast<double>(window_steps_);
    row.exposed_comm_percent = 100.0 * window_exposed_ / w.seconds;
  }
  row.peak_memory_mib = static_cast<double>(memory_->stats().peak_allocated_bytes) / 1048576.0;
  row.peak_rss_mib = static_cast<double>(peak_rss_kib()) / 1024.0;
  return row;
}

void ProgressReport::report(TrainingRun& run, int epoch, bool evaluate_now) {
  const TrainConfig& c = run.config;
  const double loss = run.losses.check();
  const WindowRates w = measure(run);
  char head[200];
  std::snprintf(head, sizeof head, "epoch %d/%d  step %lld/%lld  loss %.4f  %.0f %s/s  data-wait %.1f%%", epoch + 1,
                c.epochs, static_cast<long long>(run.position.step), static_cast<long long>(run.planned_steps), loss,
                w.rate * run.task->units_per_example(), run.task->rate_unit().c_str(), w.wait_percent);
  std::string line = head;
  if (run.ddp && w.seconds > 0) line += comm_fields(w.seconds);
  line += amp_fields(run);
  if (const std::optional<double> mfu = run.mfu.percent(w.rate)) {
    char text[32];
    std::snprintf(text, sizeof text, "  MFU %.1f%%", *mfu);
    line += text;
  }
  last_epoch_ = epoch + 1;
  if (run.log) run.log->write(train_row(run, epoch, loss, w));
  if (evaluate_now) line += "  " + evaluate_and_log(run, epoch).text;
  line += "  ETA " + format_duration(w.eta) + "\n";
  run.out << line << std::flush;
  start_window(run);
}

Evaluation ProgressReport::evaluate_and_log(TrainingRun& run, int epoch) {
  const auto evaluation_start = Clock::now();
  Evaluation evaluation = evaluate(run);
  evaluation_seconds_ += seconds_since(evaluation_start);
  last_evaluation_.emplace(run.position.step, evaluation);
  if (run.log) {
    MetricsRow row;
    row.kind = "eval";
    row.step = run.position.step;
    row.epoch = epoch + 1;
    row.elapsed_seconds = seconds_since(start_);
    (evaluation.metric == "validation loss" ? row.eval_loss : row.eval_accuracy) = evaluation.value;
    run.log->write(row);
  }
  return evaluation;
}

Evaluation ProgressReport::final_evaluation(TrainingRun& run) {
  if (last_evaluation_ && last_evaluation_->first == run.position.step) return last_evaluation_->second;
  return evaluate_and_log(run, last_epoch_ - 1);
}

void ProgressReport::start_window(const TrainingRun& run) {
  window_start_ = Clock::now();
  window_wait_start_ = run.loader->data_wait_seconds();
  window_examples_ = window_steps_ = 0;
  window_comm_ = window_exposed_ = 0;
}

}  // namespace syncgrad::train
