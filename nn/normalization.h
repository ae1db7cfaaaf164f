// Normalisation layers: BatchNorm1d / BatchNorm2d (batch statistics per channel, running statistics for eval)
// and LayerNorm (statistics over the trailing normalized_shape), PyTorch's defaults, buffers and key names.
#pragma once

#include <optional>

#include "nn/module.h"

namespace syncgrad::nn {

// The shared implementation of BatchNorm1d and BatchNorm2d (they differ in the input ranks they accept).
// Parameters weight = 1, bias = 0 (affine); buffers running_mean = 0, running_var = 1, num_batches_tracked
// int64 0 (track_running_stats). Training (or no running stats): normalises with the batch mean and biased
// variance and updates running = (1 - momentum) * running + momentum * batch (unbiased variance),
// num_batches_tracked += 1; momentum nullopt uses the cumulative average 1 / num_batches_tracked. Eval with
// running stats: normalises with them.
class BatchNorm;

// Computes a training-mode BatchNorm forward with statistics over a batch spread across processes
// (distributed::SyncBatchNorm). BatchNorm has already counted the batch in num_batches_tracked and passes the
// running-average factor; the implementation updates the running statistics itself.
class BatchStatsSync {
 public:
  virtual ~BatchStatsSync() = default;
  virtual Tensor forward(BatchNorm& layer, const Tensor& input, double momentum_factor) = 0;
};

class BatchNorm : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  // relu(forward(input) + residual) (residual: undefined, or input's shape): the same values, running statistics
  // and gradients as the three ops, fused (batch_norm_relu), except under a stats sync, which runs the three ops.
  Tensor forward_relu(const Tensor& input, const Tensor& residual = {});
  // With a sync set, training-mode forwards take their statistics from every process's batch
  // (distributed::convert_sync_batchnorm sets it); null restores per-process statistics.
  void set_stats_sync(std::shared_ptr<BatchStatsSync> sync) { stats_sync_ = std::move(sync); }
  const std::shared_ptr<BatchStatsSync>& stats_sync() const { return stats_sync_; }

  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias;                                     // (C), undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // (C), (C), (); undefined unless tracked

 protected:
  BatchNorm(std::string type_name, std::vector<int64_t> accepted_ranks, int64_t num_features, double eps,
            std::optional<double> momentum, bool affine, bool track_running_stats);
  std::string extra_repr() const override;

 private:
  // How a forward normalises: with the batch or the running statistics, the running-average factor, and
  // whether it is an activation checkpoint's recomputation (which leaves the running statistics alone).
  struct Plan {
    bool use_batch_stats;
    double factor;
    bool recomputing;
  };
  // Checks the input, counts the batch in num_batches_tracked, and says how to normalise.
  Plan prepare(const Tensor& input);

  std::vector<int64_t> accepted_ranks_;
  std::shared_ptr<BatchStatsSync> stats_sync_;
};

// Input (N, C) or (N, C, L).
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm("BatchNorm1d", {2, 3}, num_features, eps, momentum, affine, track_running_stats) {}
};

// Input (N, C, H, W).
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true)
      : BatchNorm("BatchNorm2d", {4}, num_features, eps, momentum, affine, track_running_stats) {}
};

// Normalises over the last normalized_shape.size() dims of (*, normalized_shape); weight = 1 and bias = 0 of
// shape normalized_shape when elementwise_affine (bias = false leaves the bias out, as PyTorch 2.1's bias=False).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& input) override;

  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;  // undefined unless elementwise_affine; bias also when constructed with bias = false

 protected:
  std::string extra_repr() const override;
};

}  // namespace syncgrad::nn
