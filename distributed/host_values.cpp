// PendingValues: host integer vectors staged through the group's tensor device (see host_values.h).
#include "distributed/host_values.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"

namespace syncgrad::distributed {
namespace {

// (n) i64 on `device`, holding `values`.
Tensor staged(const std::vector<int64_t>& values, Device device) {
  Tensor host = empty({static_cast<int64_t>(values.size())}, TensorOptions{DType::i64});
  if (!values.empty()) std::memcpy(host.data_ptr(), values.data(), values.size() * sizeof(int64_t));
  return device.is_cpu() ? host : raw::to(host, device);
}

std::vector<int64_t> read_back(const Tensor& t) {
  const Tensor host = t.device().is_cpu() ? t : raw::to(t, kCPU);
  const auto* data = host.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + host.numel());
}

}  // namespace

// As a sum: rank r writes its values into slot r of a zeroed (size x n) vector, and the allreduce leaves every
// rank's values in their slots. One code path for every backend (a gather needs staging copies on NCCL); these
// vectors are a few words, so the size-fold traffic does not matter.
PendingValues PendingValues::allgather(ProcessGroup& group, const std::vector<int64_t>& mine) {
  std::vector<int64_t> slots(mine.size() * static_cast<size_t>(group.size()), 0);
  std::copy(mine.begin(), mine.end(), slots.begin() + static_cast<std::ptrdiff_t>(mine.size() * group.rank()));
  PendingValues pending = allreduce(group, slots, ReduceOp::kSum);
  pending.gathered_ = group.size();
  return pending;
}

PendingValues PendingValues::allreduce(ProcessGroup& group, const std::vector<int64_t>& mine, ReduceOp op) {
  PendingValues pending;
  pending.result_ = staged(mine, group.tensor_device());
  pending.work_ = group.allreduce(pending.result_, op);
  return pending;
}

PendingValues PendingValues::broadcast(ProcessGroup& group, const std::vector<int64_t>& values, int root) {
  PendingValues pending;
  pending.result_ = staged(values, group.tensor_device());
  pending.work_ = group.broadcast(pending.result_, root);
  return pending;
}

std::vector<std::vector<int64_t>> PendingValues::wait() {
  work_->wait();
  const std::vector<int64_t> values = read_back(result_);
  if (gathered_ == 0) return {values};
  const size_t n = values.size() / static_cast<size_t>(gathered_);
  std::vector<std::vector<int64_t>> per_rank;
  for (int r = 0; r < gathered_; ++r) {
    per_rank.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(n * r),
                          values.begin() + static_cast<std::ptrdiff_t>(n * (r + 1)));
  }
  return per_rank;
}

}  // namespace syncgrad::distributed
