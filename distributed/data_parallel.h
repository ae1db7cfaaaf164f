// DataParallel: single-process data parallelism, the baseline DDP is measured against (torch.nn.DataParallel).
// Every forward copies the model's weights into one replica per worker ("device"; on the CPU a worker
// thread), splits the batch along dim 0 between them, runs the replicas in parallel and concatenates their
// outputs. In backward the output's gradient is split the same way, the replicas' backward passes run in
// parallel, and their parameter gradients are summed onto the model's parameters, where the optimizer steps.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace syncgrad::distributed {

struct DataParallelOptions {
  int num_workers = 2;  // replicas, one per worker thread (the caller's thread runs replica 0)
  // One replica per device (PyTorch's device_ids), replacing num_workers; the module must already be on
  // devices[0], where the output is gathered and the gradients summed. Empty: every replica on the module's
  // device (CPU worker threads).
  std::vector<Device> devices{};  // {}: a designated initialiser may leave it out without a warning
  // Count what replica i allocates (its parameters, activations and gradients) under memory tag i + 1
  // (tensor/memory_tag.h), so memory_tag_stats(i + 1) is worker i's share; replica 0 shares the caller's thread.
  bool memory_tags = false;
};

// Timing of the last forward and backward through DataParallel: its communication (replicate, scatter,
// gather, reduce: serial on the caller's thread) and the parallel regions where the replicas compute.
struct DataParallelStats {
  double replicate_seconds = 0;          // copying the module's parameters and buffers into every replica
  double scatter_seconds = 0;            // splitting the input, and in backward the output's gradient
  double parallel_forward_seconds = 0;   // the replicas' forward passes, start of the first to end of the last
  double gather_seconds = 0;             // concatenating the replicas' outputs
  double parallel_backward_seconds = 0;  // the replicas' backward passes
  double reduce_seconds = 0;             // summing the replicas' gradients onto the module's parameters
  double communication_seconds() const {
    return replicate_seconds + scatter_seconds + gather_seconds + reduce_seconds;
  }
};

class DataParallel : public nn::Module {
 public:
  // `make_replica` builds a module with the same structure as `module` (its initial values do not matter:
  // every forward copies `module`'s parameters and buffers in). ValueError when a replica's parameters or
  // buffers differ from the module's in name or shape, when num_workers < 1, when a device repeats, or when
  // the module is not on devices[0] (DeviceError).
  DataParallel(std::shared_ptr<nn::Module> module, std::function<std::shared_ptr<nn::Module>()> make_replica,
               DataParallelOptions options = {});
  ~DataParallel() override;

  // input (B, ...) is split into min(B, num_workers) chunks along dim 0, chunk i copied to replica i's device;
  // returns the outputs concatenated along dim 0 (B, ...) on the module's device. Gradients reach the module's
  // parameters, not the input.
  Tensor forward(const Tensor& input) override;

  const std::shared_ptr<nn::Module>& module() const { return module_; }
  int num_workers() const { return static_cast<int>(replicas_.size()); }
  // The last forward's figures, and its backward's once that ran (zero before).
  const DataParallelStats& last_stats() const { return *stats_; }

  // Runs body(i) for i in [0, n) with body(0) on the calling thread, the others on the worker threads.
  struct Workers;

 private:
  void replicate();

  std::shared_ptr<nn::Module> module_;
  std::vector<std::shared_ptr<nn::Module>> replicas_;
  std::vector<Device> devices_;  // replica i's device (the module's for every replica without options.devices)
  std::shared_ptr<Workers> workers_;
  bool memory_tags_ = false;
  std::shared_ptr<DataParallelStats> stats_;  // shared with the gather's backward node
};

}  // namespace syncgrad::distributed
