// ProcessGroupNCCL: collectives on CUDA tensors with NCCL, one GPU per rank (private to the CUDA module; users
// reach it through make_process_group("nccl", ...), which the module registers when it loads). Each collective
// runs on the group's own stream, ordered after the work already queued on the device's compute stream by an
// event, and returns at once; its Work polls a completion event and the communicator's asynchronous error, and
// aborts the communicator when wait() times out. Once a collective has failed or timed out the group is
// broken and later calls fail at once, naming the first failure.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"

namespace syncgrad::cuda {

class ProcessGroupNCCL final : public distributed::ProcessGroup {
 public:
  // Uses options.device_index, or LOCAL_RANK when it is negative (DeviceError when that device does not
  // exist). Rank 0 publishes the NCCL id in `store`; the communicator is ready when this returns.
  ProcessGroupNCCL(std::shared_ptr<distributed::Store> store, int rank, int size,
                   const distributed::ProcessGroupOptions& options);
  ~ProcessGroupNCCL() override;

  std::string backend_name() const override { return "nccl"; }
  Device tensor_device() const override { return {DeviceType::kCUDA, options().device_index}; }
  std::shared_ptr<distributed::Work> allreduce(const Tensor& tensor,
                                               distributed::ReduceOp op = distributed::ReduceOp::kSum) override;
  std::shared_ptr<distributed::Work> broadcast(const Tensor& tensor, int root = 0) override;
  std::shared_ptr<distributed::Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) override;
  std::shared_ptr<distributed::Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                    distributed::ReduceOp op = distributed::ReduceOp::kSum) override;
  std::shared_ptr<distributed::Work> barrier() override;
  // ncclAllGather / ncclReduceScatter straight on the flat buffers (no staging copies). gather, scatter,
  // all_to_all, send, recv and new_group are not implemented here: they throw DistributedError naming the
  // operation and the backend (ProcessGroup::unsupported).
  std::shared_ptr<distributed::Work> allgather_into_tensor(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<distributed::Work> reduce_scatter_tensor(
      const Tensor& output, const Tensor& input, distributed::ReduceOp op = distributed::ReduceOp::kSum) override;

  // The communicator, stream and events the Works share (they may outlive the group object).
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace syncgrad::cuda
