// A rank's wait status in words ("exited with status 3", "was killed by SIGKILL (signal 9)") and as the
// launcher's exit status (the exit code, or 128+signal like a shell).
#pragma once

#include <string>

namespace syncgrad::launch {

std::string describe_wait_status(int status);
int exit_code_of(int status);
bool failed(int status);

}  // namespace syncgrad::launch
