// Stopping a training job cleanly when the scheduler asks: Slurm (sbatch --signal) and Kubernetes send SIGTERM
// (or SIGUSR1) some time before they kill a job. A PreemptionWatch turns those signals into a flag (the handler
// only sets it) and, once per step, into a decision every rank agrees on: one small allreduce (MAX) of "this
// rank got a signal" and "rank 0's wall-clock checkpoint interval has passed", so all ranks stop, or save, after
// the same step even when the signal reached them at different moments or reached only some of them.
//   distributed::PreemptionWatch watch({.checkpoint_interval = std::chrono::minutes(30)});
//   for (...) {
//     train_one_step();
//     const auto decision = watch.poll(group.get());  // collective: every rank, after every step
//     if (decision.save || decision.stop) save_checkpoint();
//     if (decision.stop) return distributed::kPreemptedExitStatus;  // 75: preempted, resumable
//   }
// A second signal while the checkpoint is written changes nothing (the flag is already set). Single process
// (group null or of size 1): the same, without communication.
#pragma once

#include <chrono>
#include <cstdint>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

// The exit status of a job stopped by SIGTERM/SIGUSR1 after writing its checkpoint: "preempted, resumable"
// (EX_TEMPFAIL of <sysexits.h>, which requeueing schedulers treat as "try again").
inline constexpr int kPreemptedExitStatus = 75;

struct PreemptionOptions {
  // Rank 0's wall-clock time between checkpoints (poll's `save`); zero: none.
  std::chrono::duration<double> checkpoint_interval{0};
  // Communicate every this many polls (the others answer "go on" without communicating); a signal then stops
  // the job up to this many steps later. Every rank must use the same value.
  int64_t check_every = 1;
};

struct PreemptionDecision {
  bool stop = false;  // some rank got SIGTERM or SIGUSR1: save and exit with kPreemptedExitStatus
  bool save = false;  // the checkpoint interval has passed on rank 0: save and go on
};

// Installs the SIGTERM and SIGUSR1 handlers for its lifetime: the previous ones come back on destruction, unless
// a signal arrived or a poll decided to stop (the process is then stopping, and a later SIGTERM, e.g. from a
// launcher stopping the ranks, must not kill it on its way out). One at a time per process: a second one while
// another lives is refused (ValueError).
class PreemptionWatch {
 public:
  explicit PreemptionWatch(PreemptionOptions options = {});
  ~PreemptionWatch();
  PreemptionWatch(const PreemptionWatch&) = delete;
  PreemptionWatch& operator=(const PreemptionWatch&) = delete;

  // The agreed decision after a step. Collective when `group` has several ranks: every rank calls it the same
  // number of times. A `save` restarts the interval.
  PreemptionDecision poll(ProcessGroup* group);
  // poll(group).stop, for loops that save only when stopping.
  bool should_stop(ProcessGroup* group) { return poll(group).stop; }

  // The signal this process got (SIGTERM or SIGUSR1), or 0; this rank only, not agreed.
  static int received_signal();
  // As if `signal` had arrived (tests, or a loop that wants to stop for its own reasons).
  static void request_stop(int signal);

 private:
  PreemptionOptions options_;
  int64_t polls_ = 0;
  std::chrono::steady_clock::time_point interval_start_;
};

}  // namespace syncgrad::distributed
