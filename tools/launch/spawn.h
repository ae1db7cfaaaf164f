// Starting one rank: PROGRAM (searched in PATH like execvp) in its own process group, so that the launcher
// can stop it together with its children, with stdout and stderr on pipes the launcher reads, stdin at
// /dev/null, and killed (SIGKILL) when the launcher dies, however it dies (PR_SET_PDEATHSIG). The rank also gets
// the write end of a heartbeat pipe, named by SYNCGRAD_HEARTBEAT_FD in its environment.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace syncgrad::launch {

struct SpawnedProcess {
  pid_t pid = -1;      // also its process group id
  int stdout_fd = -1;  // non-blocking read ends, owned by the caller
  int stderr_fd = -1;
  int heartbeat_fd = -1;  // read end of the rank's heartbeat pipe (distributed/rank_heartbeat.h)
};

// Runs command[0] with `env` (and SYNCGRAD_HEARTBEAT_FD), the signals in `reset` at their default dispositions and none blocked.
// LaunchError naming the program when it cannot be executed (not found in PATH, not executable, ...). The
// death signal is tied to the calling thread: call it from the thread that lives as long as the launcher.
SpawnedProcess spawn_process(const std::vector<std::string>& command, const std::vector<std::string>& env,
                             const sigset_t& reset);

}  // namespace syncgrad::launch
