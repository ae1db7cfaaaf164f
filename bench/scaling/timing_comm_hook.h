// TimingCommHook: a communication hook that runs another one and times its two calls on the training thread --
// launch() (during backward: the encoding, e.g. the casts to f16 or PowerSGD's first products, and the
// collectives it starts) and finish() (after the launched collectives completed: the decoding, and any
// collective it runs and waits for itself, like PowerSGD's second one). It tells the CountingProcessGroup which
// call and bucket the collectives it issues belong to. The bench takes finish() out of backward's compute.
#pragma once

#include <memory>

#include "distributed/comm_hook.h"
#include "bench/scaling/counting_process_group.h"

namespace syncgrad::bench {

class TimingCommHook : public distributed::CommHook {
 public:
  TimingCommHook(std::shared_ptr<distributed::CommHook> inner, std::shared_ptr<CountingProcessGroup> group);

  std::string name() const override { return inner_->name(); }
  std::shared_ptr<distributed::Work> launch(distributed::ProcessGroup& group, distributed::GradBucket& bucket) override;
  void finish(distributed::ProcessGroup& group, distributed::GradBucket& bucket) override;
  void check_bucket(DType dtype, const Device& device) const override { inner_->check_bucket(dtype, device); }

  // Seconds spent in launch() and finish() since the last reset (call reset before each backward).
  double launch_seconds() const { return launch_seconds_; }
  double finish_seconds() const { return finish_seconds_; }
  void reset() { launch_seconds_ = finish_seconds_ = 0; }

 private:
  std::shared_ptr<distributed::CommHook> inner_;
  std::shared_ptr<CountingProcessGroup> group_;
  double launch_seconds_ = 0, finish_seconds_ = 0;
};

}  // namespace syncgrad::bench
