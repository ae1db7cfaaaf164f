// CountingProcessGroup: a ProcessGroup that passes every collective on to another one, counts the bytes handed
// to it, and on request records the collectives of a step (kind, bytes, dtype, which communication-hook call
// issued them, and a copy of the values sent), so that the bench can report what each communication hook
// really sends per step and time those very messages again after training (collective_record.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/process_group.h"
#include "bench/scaling/collective_record.h"

namespace syncgrad::bench {

class CountingProcessGroup : public distributed::ProcessGroup {
 public:
  explicit CountingProcessGroup(std::shared_ptr<distributed::ProcessGroup> inner);

  // Bytes of the tensors handed to collectives so far (allreduce/broadcast: the tensor; allgather: the input;
  // reduce_scatter: the inputs), on this rank.
  double payload_bytes() const { return bytes_.load(); }

  // Which communication-hook call the collectives issued from now on belong to (TimingCommHook sets it).
  void set_origin(CollectiveOrigin origin);
  // While on, every collective is recorded with a copy of its input (call from the training thread).
  void set_recording(bool on);
  // The collectives recorded since the last take, in call order; clears the record.
  std::vector<CollectiveRecord> take_recorded();
  // The inner group (replays go to it directly, so that they are neither counted nor recorded).
  distributed::ProcessGroup& inner() const { return *inner_; }

  std::string backend_name() const override;
  std::shared_ptr<distributed::Work> allreduce(const Tensor& tensor, distributed::ReduceOp op) override;
  std::shared_ptr<distributed::Work> broadcast(const Tensor& tensor, int root) override;
  std::shared_ptr<distributed::Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input) override;
  std::shared_ptr<distributed::Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                    distributed::ReduceOp op) override;
  std::shared_ptr<distributed::Work> barrier() override;

 private:
  void count(CollectiveKind kind, const Tensor& input, double bytes, distributed::ReduceOp op, int root);

  std::shared_ptr<distributed::ProcessGroup> inner_;
  std::atomic<double> bytes_{0};
  mutable std::mutex mutex_;  // guards the recording (collectives may be issued from more than one thread)
  CollectiveOrigin origin_;
  bool recording_ = false;
  std::vector<CollectiveRecord> records_;
};

}  // namespace syncgrad::bench
