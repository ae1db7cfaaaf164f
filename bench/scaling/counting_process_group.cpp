// CountingProcessGroup: forwarding with a byte count and an optional record of one step's collectives.
#include "bench/scaling/counting_process_group.h"

#include <utility>

#include "tensor/ops/copy.h"

namespace syncgrad::bench {

using distributed::ReduceOp;
using distributed::Work;

CountingProcessGroup::CountingProcessGroup(std::shared_ptr<distributed::ProcessGroup> inner)
    : ProcessGroup(inner->rank(), inner->size(), inner->options()), inner_(std::move(inner)) {}

std::string CountingProcessGroup::backend_name() const { return inner_->backend_name(); }

void CountingProcessGroup::set_origin(CollectiveOrigin origin) {
  std::lock_guard lock(mutex_);
  origin_ = origin;
}

void CountingProcessGroup::set_recording(bool on) {
  std::lock_guard lock(mutex_);
  recording_ = on;
}

std::vector<CollectiveRecord> CountingProcessGroup::take_recorded() {
  std::lock_guard lock(mutex_);
  return std::exchange(records_, {});
}

void CountingProcessGroup::count(CollectiveKind kind, const Tensor& input, double bytes, ReduceOp op, int root) {
  bytes_.fetch_add(bytes);
  std::lock_guard lock(mutex_);
  if (!recording_) return;
  const Tensor contiguous = raw::contiguous(input);
  const auto* data = static_cast<const std::byte*>(contiguous.data_ptr());
  records_.push_back({kind, origin_, input.dtype(), bytes, op, root, input.numel(),
                      std::vector<std::byte>(data, data + contiguous.nbytes())});
}

std::shared_ptr<Work> CountingProcessGroup::allreduce(const Tensor& tensor, ReduceOp op) {
  count(CollectiveKind::kAllreduce, tensor, static_cast<double>(tensor.nbytes()), op, 0);
  return inner_->allreduce(tensor, op);
}

std::shared_ptr<Work> CountingProcessGroup::broadcast(const Tensor& tensor, int root) {
  count(CollectiveKind::kBroadcast, tensor, static_cast<double>(tensor.nbytes()), ReduceOp::kSum, root);
  return inner_->broadcast(tensor, root);
}

std::shared_ptr<Work> CountingProcessGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input) {
  count(CollectiveKind::kAllgather, input, static_cast<double>(input.nbytes()), ReduceOp::kSum, 0);
  return inner_->allgather(outputs, input);
}

std::shared_ptr<Work> CountingProcessGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                           ReduceOp op) {
  // Not replayed (no hook of the bench issues one): counted only.
  for (const Tensor& t : inputs) bytes_.fetch_add(static_cast<double>(t.nbytes()));
  return inner_->reduce_scatter(output, inputs, op);
}

std::shared_ptr<Work> CountingProcessGroup::barrier() { return inner_->barrier(); }

}  // namespace syncgrad::bench
