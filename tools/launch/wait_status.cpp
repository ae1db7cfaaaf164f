// Turns waitpid() statuses into words and shell-style exit codes.
#include "tools/launch/wait_status.h"

#include <sys/wait.h>

#include <cstring>

namespace syncgrad::launch {

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    std::string name = abbrev != nullptr ? std::string("SIG") + abbrev : "signal";
    return "was killed by " + name + " (signal " + std::to_string(sig) + ")" +
           (WCOREDUMP(status) ? ", core dumped" : "");
  }
  return "stopped with wait status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool failed(int status) { return exit_code_of(status) != 0; }

}  // namespace syncgrad::launch
