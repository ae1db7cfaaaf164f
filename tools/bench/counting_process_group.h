// CountingProcessGroup: a ProcessGroup that passes every collective on to another one and counts the bytes
// handed to it, so the bench can report what each communication hook really sends per step.
#pragma once

#include <atomic>
#include <memory>

#include "distributed/process_group.h"

namespace syncgrad::bench {

class CountingProcessGroup : public distributed::ProcessGroup {
 public:
  explicit CountingProcessGroup(std::shared_ptr<distributed::ProcessGroup> inner);

  // Bytes of the tensors handed to collectives so far (allreduce/broadcast: the tensor; allgather: the input;
  // reduce_scatter: the inputs), on this rank.
  double payload_bytes() const { return bytes_.load(); }

  std::string backend_name() const override;
  std::shared_ptr<distributed::Work> allreduce(const Tensor& tensor, distributed::ReduceOp op) override;
  std::shared_ptr<distributed::Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<distributed::Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) override;
  std::shared_ptr<distributed::Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                    distributed::ReduceOp op) override;
  std::shared_ptr<distributed::Work> barrier() override;

 private:
  void count(double bytes) { bytes_.fetch_add(bytes); }

  std::shared_ptr<distributed::ProcessGroup> inner_;
  std::atomic<double> bytes_{0};
};

}  // namespace syncgrad::bench
