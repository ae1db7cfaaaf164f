// Per-step metrics appended to a CSV or JSONL file (chosen by the extension), one row per logged step.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace syncgrad::train {

struct StepMetrics {
  int64_t step = 0;
  int epoch = 0;
  double loss = 0;
  double lr = 0;
  double samples_per_second = 0;
  double elapsed_seconds = 0;
  double data_wait_percent = 0;  // share of the interval spent waiting for batches
  double loss_scale = 1;         // --amp fp16: the GradScaler's scale (1 otherwise)
  int64_t skipped_steps = 0;     // optimizer steps skipped so far for inf/NaN gradients (--amp fp16)
};

class MetricsLog {
 public:
  // Opens `path` for appending (creating it with a header for CSV); throws IOError naming the path.
  explicit MetricsLog(const std::string& path);
  void write(const StepMetrics& m);

 private:
  std::ofstream out_;
  bool jsonl_ = false;
};

}  // namespace syncgrad::train
