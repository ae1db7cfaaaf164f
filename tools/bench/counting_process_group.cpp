// CountingProcessGroup: forwarding with a byte count.
#include "tools/bench/counting_process_group.h"

namespace syncgrad::bench {

using distributed::ReduceOp;
using distributed::Work;

CountingProcessGroup::CountingProcessGroup(std::shared_ptr<distributed::ProcessGroup> inner)
    : ProcessGroup(inner->rank(), inner->size(), inner->options()), inner_(std::move(inner)) {}

std::string CountingProcessGroup::backend_name() const { return inner_->backend_name(); }

std::shared_ptr<Work> CountingProcessGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  count(static_cast<double>(tensor.nbytes()));
  return inner_->allreduce(tensor, op);
}

std::shared_ptr<Work> CountingProcessGroup::broadcast(const Tensor& tensor, int root) {
  count(static_cast<double>(tensor.nbytes()));
  return inner_->broadcast(tensor, root);
}

std::shared_ptr<Work> CountingProcessGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  count(static_cast<double>(input.nbytes()));
  return inner_->allgather(outputs, input);
}

std::shared_ptr<Work> CountingProcessGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                           ReduceOp op) {
  for (const Tensor& t : inputs) count(static_cast<double>(t.nbytes()));
  return inner_->reduce_scatter(output, inputs, op);
}

std::shared_ptr<Work> CountingProcessGroup::barrier() { return inner_->barrier(); }

}  // namespace syncgrad::bench
