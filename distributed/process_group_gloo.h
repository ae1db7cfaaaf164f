// ProcessGroupGloo: collectives on CPU tensors over Gloo's TCP transport. Calls return a Work at once; one
// background thread per group runs the collectives in call order (the same order on every rank), so the
// caller keeps computing (DDP's overlap). A failure names the peer rank and the collective; once a
// collective has failed the group is broken and later calls fail at once with that first error.
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
  // Not a true reduce-scatter: an allreduce of the concatenated inputs, of which this rank keeps its part
  // (Gloo's options API has no reduce-scatter); same result, about twice the bytes on the wire.
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                       ReduceOp op = ReduceOp::kSum) override;
  std::shared_ptr<Work> barrier() override;

  // The internals the worker thread and the Works share (they may outlive the group object).
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace syncgrad::distributed
