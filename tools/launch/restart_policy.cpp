// Decides whether syncgrad-launch starts all ranks again after an attempt ended (--max-restarts).
#include "tools/launch/restart_policy.h"

#include "distributed/preemption.h"
#include "tools/launch/wait_status.h"

namespace syncgrad::launch {

RestartDecision decide_restart(const AttemptEnd& end, int restarts_done, int max_restarts) {
  if (!end.failure_status || !failed(*end.failure_status) || end.got_stop_signal || max_restarts == 0) return {};
  int code = exit_code_of(*end.failure_status);
  if (code == distributed::kPreemptedExitStatus) return {};
  std::string what = "rank " + std::to_string(end.failed_rank.value_or(-1)) + " " +
                     describe_wait_status(*end.failure_status);
  if (restarts_done < max_restarts) {
    return {true, what + "; restarting all ranks (restart " + std::to_string(restarts_done + 1) + " of " +
                      std::to_string(max_restarts) + ")"};
  }
  return {false, what + "; restarts exhausted (" + std::to_string(max_restarts) + " of " +
                     std::to_string(max_restarts) + " used, --max-restarts " + std::to_string(max_restarts) +
                     "); exiting with status " + std::to_string(code)};
}

}  // namespace syncgrad::launch
