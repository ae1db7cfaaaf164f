// SyncBatchNorm: BatchNorm whose training-mode statistics (mean and variance) come from the whole batch
// spread over every rank of a process group, as torch.nn.SyncBatchNorm. Backward reduces the two per-channel
// sums it needs across ranks too, so 2 ranks x batch B match one process with batch 2B.
#pragma once

#include <memory>

#include "distributed/process_group.h"
#include "nn/normalization.h"

namespace syncgrad::distributed {

// Input (N, C, *) with any number of trailing dims.
class SyncBatchNorm : public nn::BatchNorm {
 public:
  // group null: the default group at the time of each forward.
  explicit SyncBatchNorm(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                         bool affine = true, bool track_running_stats = true,
                         std::shared_ptr<ProcessGroup> group = nullptr);
};

// The BatchStatsSync that makes a BatchNorm synchronous over `group` (null: the default group).
std::shared_ptr<nn::BatchStatsSync> make_batch_stats_sync(std::shared_ptr<ProcessGroup> group = nullptr);

// Makes every BatchNorm layer in `model` synchronous over `group` in place (the layers keep their parameters,
// buffers and identity); returns how many layers it converted.
int convert_sync_batchnorm(nn::Module& model, std::shared_ptr<ProcessGroup> group = nullptr);

// The differentiable op: y = (x - mean) / sqrt(var + eps) * weight + bias with mean and (biased) var over all
// ranks' (N, *) positions per channel; updates running_mean / running_var (unbiased) with `momentum_factor`
// when they are defined. weight and bias may be undefined.
Tensor sync_batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum_factor, double eps,
                       const std::shared_ptr<ProcessGroup>& group);

}  // namespace syncgrad::distributed
