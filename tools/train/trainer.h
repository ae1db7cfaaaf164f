// The training loop behind syncgrad-train: the task's data and model (tools/train/task.h), optimizer,
// progress lines, metrics log, checkpoints and resume, then the task's held-out evaluation. When the environment describes several processes (WORLD_SIZE > 1,
// as syncgrad-launch sets it) it joins the process group, wraps the model in DistributedDataParallel, shards
// the data with a DistributedSampler, evaluates on every rank's share of the held-out data, and only rank 0
// prints, logs and saves.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "distributed/ddp_logging.h"

#include "tensor/device.h"
#include "tensor/errors.h"

#include "tools/train/loss_watch.h"
#include "tools/train/task.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

struct TrainSummary {
  int64_t steps = 0;
  int64_t samples = 0;
  double wall_seconds = 0;
  double samples_per_second = 0;  // examples of all ranks per second
  std::string rate_unit = "samples";  // what the task counts (Task::rate_unit), and how many per example
  int64_t units_per_example = 1;
  Evaluation evaluation;          // the task's held-out metric after training (the same on every rank)
  size_t peak_tensor_bytes = 0;   // the training device's caching allocator: high-water mark
  size_t optimizer_state_bytes = 0;  // CPU: what the optimizer steps left allocated (this rank's state)
  Device device;                  // where the run trained
  long peak_rss_kib = 0;          // VmHWM
  int rank = 0;                   // this process's rank; only rank 0 reports
  int world_size = 1;
  std::optional<distributed::DDPLoggingData> ddp_logging;  // under DDP: this rank's, after the last step
};

TrainSummary run_training(const TrainConfig& config, std::ostream& out);

}  // namespace syncgrad::train
