// SIGTERM/SIGUSR1 to a flag, and the flag to a decision all ranks agree on (see preemption.h).
#include "distributed/preemption.h"

#include <atomic>
#include <csignal>

#include "distributed/host_values.h"
#include "tensor/check.h"

namespace syncgrad::distributed {
namespace {

// Written by the signal handler: lock-free, so async-signal-safe.
std::atomic<int> received{0};
static_assert(std::atomic<int>::is_always_lock_free);
std::atomic<bool> watching{false};
std::atomic<bool> stop_agreed{false};  // a poll decided to stop (also on ranks that got no signal)

constexpr int kWatchedSignals[] = {SIGTERM, SIGUSR1};
struct sigaction previous[2];

extern "C" void on_preemption_signal(int signal) {
  int none = 0;
  received.compare_exchange_strong(none, signal);  // the first signal is the one reported
}

}  // namespace

PreemptionWatch::PreemptionWatch(PreemptionOptions options)
    : options_(options), interval_start_(std::chrono::steady_clock::now()) {
  SYNCGRAD_CHECK(options_.check_every >= 1, ValueError, "PreemptionWatch: check_every ", options_.check_every,
                 " must be at least 1 (communicate every that many polls)");
  SYNCGRAD_CHECK(options_.checkpoint_interval.count() >= 0, ValueError, "PreemptionWatch: checkpoint_interval ",
                 options_.checkpoint_interval.count(), " s is negative; use 0 for none");
  SYNCGRAD_CHECK(!watching.exchange(true), ValueError,
                 "PreemptionWatch: another one is already installed in this process; keep one for the job");
  received = 0;  // a signal before this point had its default effect (the process would have ended)
  stop_agreed = false;
  struct sigaction action = {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes of other threads go on rather than fail with EINTR
  for (int i = 0; i < 2; ++i) sigaction(kWatchedSignals[i], &action, &previous[i]);
}

PreemptionWatch::~PreemptionWatch() {
  // Once a stop was requested or agreed the process is on its way out: a further SIGTERM (a launcher stopping
  // the ranks that are still saving or exiting) must not kill it halfway, so the flag-only handlers stay.
  if (received.load() == 0 && !stop_agreed.load()) {
    for (int i = 0; i < 2; ++i) sigaction(kWatchedSignals[i], &previous[i], nullptr);
  }
  watching = false;
}

PreemptionDecision PreemptionWatch::poll(ProcessGroup* group) {
  if (++polls_ % options_.check_every != 0) return {};
  const bool leader = group == nullptr || group->rank() == 0;
  const bool interval_passed = leader && options_.checkpoint_interval.count() > 0 &&
                               std::chrono::steady_clock::now() - interval_start_ >= options_.checkpoint_interval;
  std::vector<int64_t> mine = {received.load() != 0 ? 1 : 0, interval_passed ? 1 : 0};
  if (group != nullptr && group->size() > 1) mine = PendingValues::allreduce(*group, mine, ReduceOp::kMax).wait()[0];
  const PreemptionDecision decision{.stop = mine[0] != 0, .save = mine[1] != 0};
  if (decision.save) interval_start_ = std::chrono::steady_clock::now();
  if (decision.stop) stop_agreed = true;
  return decision;
}

int PreemptionWatch::received_signal() { return received.load(); }

void PreemptionWatch::request_stop(int signal) { on_preemption_signal(signal); }

}  // namespace syncgrad::distributed
