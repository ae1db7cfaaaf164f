// Communication hooks: how DistributedDataParallel reduces one bucket of gradients. The default averages with
// an allreduce; the compression hooks send f16 or bf16 (half the bytes); PowerSGD sends low-rank factors.
// A hook's launch() runs during backward as soon as the bucket is full; finish() runs at the end of backward
// after the Work completed and must leave the averaged gradients in bucket.buffer. check_bucket() runs when the
// hook is set, once per bucket, so a hook refuses buckets it cannot reduce as its name says instead of quietly
// doing something else. A hook that keeps state between iterations (PowerSGD) gives it with state_dict() and
// takes it back with load_state_dict(), so that a checkpoint continues it exactly (per rank: each rank's state
// is its own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "tensor/tensor.h"

namespace syncgrad::distributed {

struct GradBucket {
  size_t index = 0;
  Tensor buffer;                  // (numel) flat gradients of the bucket's parameters, already / world size
  std::vector<Tensor> gradients;  // views into buffer, shaped like the parameters
  std::vector<size_t> parameters;  // each gradient's parameter: its index among DDP's trainable parameters
  int64_t iteration = 0;          // synchronised backward passes before this one
};

class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual std::string name() const = 0;
  // Starts the reduction of bucket.buffer and returns the Work to wait for.
  virtual std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) = 0;
  // Called once the Work completed: leaves the averaged gradients in bucket.buffer.
  virtual void finish(ProcessGroup& group, GradBucket& bucket) {}
  // Throws (DeviceError / DTypeError naming the bucket's device or dtype) when this hook cannot reduce a bucket
  // of this dtype on this device. DistributedDataParallel calls it for every bucket at construction and in
  // register_comm_hook. Every dtype and device is accepted by default.
  virtual void check_bucket(DType dtype, const Device& device) const {}
  // Throws ValueError naming the hook when it cannot run under DistributedDataParallel::join(), where a rank
  // that ran out of inputs sends zero buckets through it and must add nothing to the others' gradients.
  // Accepted by default: a zero bucket adds nothing to a sum.
  virtual void check_join() const {}
  // This rank's state that an exact continuation needs, under names that do not depend on how parameters are
  // bucketed (PowerSGD: "param<i>.error" and "param<i>.q" per compressed parameter i); empty for a stateless
  // hook. Host tensors, copies.
  virtual std::vector<std::pair<std::string, Tensor>> state_dict() const { return {}; }
  // Takes back what state_dict() gave (of the same hook on the same model), to be used from the next
  // reduction on. ValueError naming the entry for state this hook cannot take (any, for a stateless hook).
  virtual void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& state);
  // Forgets all state, as a new hook would start (after a change of world size, say).
  virtual void reset_state() {}
};

// Sum of the pre-divided buffers: the average (PyTorch's default).
std::shared_ptr<CommHook> allreduce_hook();
// Reduce in f16 / bf16 and convert back (PyTorch's fp16_compress_hook / bf16_compress_hook).
std::shared_ptr<CommHook> fp16_compress_hook();
std::shared_ptr<CommHook> bf16_compress_hook();

struct PowerSGDOptions {
  int matrix_approximation_rank = 1;
  int64_t start_iteration = 10;  // plain allreduce before this iteration (PyTorch: start_powerSGD_iter)
  bool use_error_feedback = true;
  bool warm_start = true;        // reuse Q from the previous iteration
  double min_compression_rate = 2;  // compress a matrix only when it shrinks at least this much
  uint64_t seed = 0;             // Q's initial random values (identical on every rank)
};
// Compresses float32/float64 buckets on the CPU only: a CUDA or float16/bfloat16 bucket is refused by
// check_bucket (use allreduce_hook, fp16_compress_hook or bf16_compress_hook there).
std::shared_ptr<CommHook> powersgd_hook(const PowerSGDOptions& options = {});

// By name, for command lines: "allreduce", "fp16", "bf16", "powersgd" (rank 1) or "powersgd:R" (rank R).
// ValueError listing the names otherwise.
std::shared_ptr<CommHook> make_comm_hook(const std::string& name);

}  // namespace syncgrad::distributed
