// TimingCommHook: the wrapped calls between two clock reads, with the collectives' origin set around them.
#include "bench/scaling/timing_comm_hook.h"

#include <chrono>

namespace syncgrad::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

TimingCommHook::TimingCommHook(std::shared_ptr<distributed::CommHook> inner,
                               std::shared_ptr<CountingProcessGroup> group)
    : inner_(std::move(inner)), group_(std::move(group)) {}

std::shared_ptr<distributed::Work> TimingCommHook::launch(distributed::ProcessGroup& group,
                                                          distributed::GradBucket& bucket) {
  const auto start = Clock::now();
  group_->set_origin({CollectiveOrigin::Call::kLaunch, static_cast<int>(bucket.index)});
  auto work = inner_->launch(group, bucket);
  group_->set_origin({});
  launch_seconds_ += since(start);
  return work;
}

void TimingCommHook::finish(distributed::ProcessGroup& group, distributed::GradBucket& bucket) {
  const auto start = Clock::now();
  group_->set_origin({CollectiveOrigin::Call::kFinish, static_cast<int>(bucket.index)});
  inner_->finish(group, bucket);
  group_->set_origin({});
  finish_seconds_ += since(start);
}

}  // namespace syncgrad::bench
