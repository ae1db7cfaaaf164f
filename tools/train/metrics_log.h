// Per-step metrics appended to a CSV or JSONL file (chosen by the extension): a "train" row at every progress
// line and an "eval" row after every held-out evaluation. The columns, in this order (the CSV header; the
// JSONL keys), are those of kMetricsColumns; a value that does not apply to the run or the row (the loss
// scale without --amp fp16, communication without DDP, MFU on a GPU, the training columns of an "eval" row)
// is an empty CSV cell or a JSON null, never 0. docs/GUIDE.md ("Metrics and plots") describes each column.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace syncgrad::train {

// The columns: the first nine are the log's original ones, in their original order.
inline const std::vector<std::string> kMetricsColumns = {
    "step", "epoch", "loss", "lr", "samples_per_second", "elapsed_seconds", "data_wait_percent", "loss_scale",
    "skipped_steps", "kind", "tokens_per_second", "mfu_percent", "comm_ms_per_step", "exposed_comm_ms_per_step",
    "exposed_comm_percent", "peak_memory_mib", "peak_rss_mib", "eval_loss", "eval_accuracy"};

struct MetricsRow {
  std::string kind = "train";  // "train" (a progress line) or "eval" (a held-out evaluation)
  int64_t step = 0;            // optimizer steps so far
  int epoch = 0;               // 1-based
  double elapsed_seconds = 0;  // since the start of the run (this process's)
  // "train" rows: the last micro-batch's loss, the last step's lr, then rates over the window since the
  // previous progress line.
  std::optional<double> loss, lr;
  std::optional<double> samples_per_second, tokens_per_second;  // all ranks; tokens for a text task only
  std::optional<double> data_wait_percent;                      // of the window spent waiting for batches
  std::optional<double> loss_scale;                             // --amp fp16: the GradScaler's scale
  std::optional<int64_t> skipped_steps;                         // --amp fp16: inf/NaN steps skipped so far
  std::optional<double> mfu_percent;                            // model FLOPs utilisation (tools/train/mfu.h)
  // DDP: reduction time per step, the part of it backward's end waited for, and that as a share of the window.
  std::optional<double> comm_ms_per_step, exposed_comm_ms_per_step, exposed_comm_percent;
  std::optional<double> peak_memory_mib;  // the training device's tensor allocator, high-water mark so far
  std::optional<double> peak_rss_mib;     // the process's peak resident set (VmHWM)
  // "eval" rows: the held-out metric (validation loss of the text task; test accuracy as a fraction in [0, 1]).
  std::optional<double> eval_loss, eval_accuracy;
};

class MetricsLog {
 public:
  // Opens `path` for appending (creating it with a header for CSV); IOError naming the path when it cannot, or
  // when an existing CSV file has another header (an older syncgrad's log, or another program's).
  explicit MetricsLog(const std::string& path);
  void write(const MetricsRow& row);

 private:
  std::ofstream out_;
  bool jsonl_ = false;
};

// The row's cells in kMetricsColumns order, as text: "" for an absent value, numbers with 6 significant digits.
std::vector<std::string> metrics_cells(const MetricsRow& row);

}  // namespace syncgrad::train
