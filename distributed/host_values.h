// Small integer vectors exchanged through a process group: DDP's bookkeeping (the step-agreement check, the
// used-parameter flags, the shared bucket order, the option fingerprints). The values live on the host; each
// collective stages them on the device the group's collectives take (host memory for Gloo, the rank's CUDA
// device for NCCL) and copies the result back when it is waited for.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

// A collective on host values that is running; wait() returns its result (rethrowing the Work's error).
class PendingValues {
 public:
  // Every rank's `mine` (equal lengths on all ranks), in rank order.
  static PendingValues allgather(ProcessGroup& group, const std::vector<int64_t>& mine);
  // The elementwise reduction of every rank's `mine`.
  static PendingValues allreduce(ProcessGroup& group, const std::vector<int64_t>& mine, ReduceOp op);
  // Root's `values` on every rank.
  static PendingValues broadcast(ProcessGroup& group, const std::vector<int64_t>& values, int root);

  // allgather: one vector per rank; allreduce and broadcast: one vector.
  std::vector<std::vector<int64_t>> wait();

 private:
  std::shared_ptr<Work> work_;
  Tensor result_;     // (n) i64 on the group's device; an allgather's is (size x n), rank r's values in slot r
  int gathered_ = 0;  // allgather: the group's size; else 0
};

}  // namespace syncgrad::distributed
