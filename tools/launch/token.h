// The job's store token: the secret every rank presents to the launcher's TCPStore before any request.
#pragma once

#include <string>

#include "tools/launch/options.h"

namespace syncgrad::launch {

// 128 bits from /dev/urandom as 32 hex digits; LaunchError when the random source cannot be read.
std::string random_token();

// --token, else (with --nnodes > 1) $SYNCGRAD_STORE_TOKEN, else on one node a fresh random_token(). With
// --nnodes > 1 and neither, a UsageError: every node's launcher needs the same token.
std::string job_token(const LaunchOptions& options);

}  // namespace syncgrad::launch
