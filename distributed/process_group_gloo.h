// ProcessGroupGloo: collectives on CPU tensors over Gloo's TCP transport. Calls return a Work at once; one
// background thread per group runs the collectives in call order (the same order on every rank), so the
// caller keeps computing (DDP's overlap). A failure names the peer rank and the collective; once a
// collective has failed the group is broken and later calls fail at once with that first error.
//
// Algorithms: Gloo's own where it has one -- allreduce (ring; messages up to 8 MiB on a synchronous legacy
// ring), broadcast, allgather (ring), gather, scatter, alltoall, and unbound-buffer send/recv for the
// point-to-point calls; reduce_scatter is syncgrad's ring on Gloo's send/recv (distributed/gloo_ring.h).
#pragma once

#include <memory>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

class ProcessGroupGloo : public ProcessGroup {
 public:
  // Rendezvous through `store` (every rank sets its address, waits for the others'). RendezvousError
  // names the ranks that never arrived.
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options);
  ~ProcessGroupGloo() override;

  std::string backend_name() const override { return "gloo"; }
  std::shared_ptr<Work> allreduce(const Tensor& tensor, ReduceOp op = ReduceOp::kSum) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0) override;
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) override;
  // A ring: each rank sends (size()-1) blocks of output's size.
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                       ReduceOp op = ReduceOp::kSum) override;
  std::shared_ptr<Work> barrier() override;
  std::shared_ptr<Work> allgather_into_tensor(const Tensor& output, const Tensor& input) override;
  std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                              ReduceOp op = ReduceOp::kSum) override;
  std::shared_ptr<Work> gather(const std::vector<Tensor>& outputs, const Tensor& input, int root = 0) override;
  std::shared_ptr<Work> scatter(const Tensor& output, const std::vector<Tensor>& inputs, int root = 0) override;
  std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input) override;
  // Each posted send/recv gets a thread of its own that waits for it to complete.
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, uint32_t tag = 0) override;
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, uint32_t tag = 0) override;
  // Members connect a new Gloo group (own listener and connections) under "subgroup/<n>/" of this group's store.
  std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks) override;

  // The internals the worker thread and the Works share (they may outlive the group object).
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Store> store_;
  uint64_t subgroups_created_ = 0;
};

}  // namespace syncgrad::distributed
