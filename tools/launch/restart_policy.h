// --max-restarts: whether an attempt of the job that has ended is started again, and the launcher's line
// saying so. A failed rank (any non-zero status or a signal death) restarts all ranks while restarts remain;
// a preempted rank (status 75, resumable by a later job) and a stop signal to the launcher never do.
#pragma once

#include <optional>
#include <string>

namespace syncgrad::launch {

// How one attempt ended (from Supervisor after run()).
struct AttemptEnd {
  std::optional<int> failed_rank;     // the first failing rank, if any
  std::optional<int> failure_status;  // its wait status
  bool got_stop_signal = false;       // SIGINT/SIGTERM/SIGHUP reached the launcher
};

struct RestartDecision {
  bool restart = false;
  std::string message;  // the launcher's line (without "syncgrad-launch: "); empty: nothing to say
};

// `restarts_done`: the restarts already made (0 after the first attempt) of `max_restarts`.
RestartDecision decide_restart(const AttemptEnd& end, int restarts_done, int max_restarts);

}  // namespace syncgrad::launch
