// How long a rank may stay silent on its heartbeat pipe before syncgrad-launch kills it as hung: the ranks'
// collective timeout (--timeout, else $SYNCGRAD_TIMEOUT, else the library's 600 s) and 5 s more, so that in the
// usual case (one rank hung, the others waiting for it) the waiting ranks' own TimeoutError, which names the
// silent rank, comes first; the launcher's kill covers the rest (every rank stopped, a rank stuck outside a
// collective).
#pragma once

#include <chrono>

#include "tools/launch/options.h"

namespace syncgrad::launch {

std::chrono::milliseconds hang_limit(const LaunchOptions& options);

}  // namespace syncgrad::launch
