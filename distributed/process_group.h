// ProcessGroup: the collectives of `size()` ranks over one backend (Gloo for CPU tensors, NCCL for CUDA
// tensors). Every rank must call the same collectives in the same order with matching tensors; each call
// returns at once with a Work and the collective runs in the background. Tensors must be contiguous and
// stay alive and unmodified until the Work completes. Dtypes: f32, f64, f16, bf16, i64, i32.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distributed/store.h"
#include "distributed/work.h"
#include "tensor/tensor.h"

namespace syncgrad::distributed {

enum class ReduceOp { kSum, kAvg, kMax, kMin };
const char* reduce_op_name(ReduceOp op);

struct ProcessGroupOptions {
  // How long a collective may take before it fails (PyTorch's default is 30 min; ours is shorter so a
  // dead rank shows quickly).
  std::chrono::milliseconds timeout{600'000};
  // Gloo: the address this rank's sockets bind to (empty: the address that reaches the master).
  std::string bind_address;
  // NCCL: the CUDA device of this rank (LOCAL_RANK by default).
  int device_index = -1;
};

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, ProcessGroupOptions options) : rank_(rank), size_(size), options_(options) {}
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  const ProcessGroupOptions& options() const { return options_; }
  virtual std::string backend_name() const = 0;
  // Where this group's collectives take their tensors: the host for Gloo, this rank's CUDA device for NCCL.
  virtual Device tensor_device() const { return kCPU; }

  // In place: every rank's `tensor` becomes the reduction over ranks (kAvg divides by size()).
  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::kSum) = 0;
  // In place: every rank's `tensor` becomes root's.
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0) = 0;
  // outputs[r] receives rank r's `input` (size() tensors shaped like input).
  virtual std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) = 0;
  // output = reduction over ranks of their inputs[rank()] (size() inputs, each shaped like output). This is the
  // result of a reduce-scatter, not necessarily its traffic: NCCL runs ncclReduceScatter, while Gloo (no
  // reduce-scatter in its options API) allreduces all size() inputs concatenated and keeps this rank's part,
  // about twice the traffic of a true reduce-scatter (a ring allreduce is a reduce-scatter plus an allgather).
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                               ReduceOp op = ReduceOp::kSum) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;

 private:
  int rank_;
  int size_;
  ProcessGroupOptions options_;
};

// Backends register a factory under their name ("gloo" at library load, "nccl" when the CUDA module loads).
using ProcessGroupFactory = std::function<std::shared_ptr<ProcessGroup>(
    std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options)>;
void register_process_group_backend(const std::string& name, ProcessGroupFactory factory);
// Throws DistributedError naming the backend and the available ones when it is not registered.
std::shared_ptr<ProcessGroup> make_process_group(const std::string& backend, std::shared_ptr<Store> store,
                                                 int rank, int size, const ProcessGroupOptions& options);

}  // namespace syncgrad::distributed
