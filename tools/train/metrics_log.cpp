// MetricsLog: CSV or JSONL rows.
#include "tools/train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::train {

MetricsLog::MetricsLog(const std::string& path) {
  jsonl_ = path.size() >= 6 && path.substr(path.size() - 6) == ".jsonl";
  bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  out_.open(path, std::ios::app);
  SYNCGRAD_CHECK(out_, IOError, "--log-file: cannot open \"", path, "\" for appending: ", std::strerror(errno),
                 "; check that the directory exists and is writable");
  if (!jsonl_ && fresh) {
    out_ << "step,epoch,loss,lr,samples_per_second,elapsed_seconds,data_wait_percent,loss_scale,skipped_steps\n";
  }
}

void MetricsLog::write(const StepMetrics& m) {
  if (jsonl_) {
    out_ << "{\"step\":" << m.step << ",\"epoch\":" << m.epoch << ",\"loss\":" << m.loss << ",\"lr\":" << m.lr
         << ",\"samples_per_second\":" << m.samples_per_second << ",\"elapsed_seconds\":" << m.elapsed_seconds
         << ",\"data_wait_percent\":" << m.data_wait_percent << ",\"loss_scale\":" << m.loss_scale
         << ",\"skipped_steps\":" << m.skipped_steps << "}\n";
  } else {
    out_ << m.step << ',' << m.epoch << ',' << m.loss << ',' << m.lr << ',' << m.samples_per_second << ','
         << m.elapsed_seconds << ',' << m.data_wait_percent << ',' << m.loss_scale << ',' << m.skipped_steps << '\n';
  }
  out_.flush();
}

}  // namespace syncgrad::train
