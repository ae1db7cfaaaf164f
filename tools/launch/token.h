// The job's store token: the secret every rank presents to the launcher's TCPStore before any request, and
// the job's id derived from it.
#pragma once

#include <optional>
#include <string>

#include "tools/launch/options.h"

namespace syncgrad::launch {

// 128 bits from /dev/urandom as 32 hex digits; LaunchError when the random source cannot be read.
std::string random_token();

// --token, else on one node a fresh random_token(), else (with --nnodes > 1) $SYNCGRAD_STORE_TOKEN, else under
// srun "slurm-" and the job and step id -- the same on every node without being passed, but no secret: it keeps
// other jobs' ranks out, not other users (export SYNCGRAD_STORE_TOKEN in the job script for that). With
// --nnodes > 1 and none of these, a UsageError: every node's launcher needs the same token.
std::string job_token(const LaunchOptions& options);

// The job's id exported as SYNCGRAD_JOB_ID: $SYNCGRAD_JOB_ID when the user set it, else under srun the Slurm job
// and step ("42.3"), else "sg-" and 12 hex digits of SHA-256 over the token -- fresh per launch on one node (fresh
// token), the same on every node of a job (shared token) without node 0 having to tell the others, and revealing
// nothing usable about the token.
std::string job_id(const std::string& token, const std::optional<std::string>& slurm_job = std::nullopt);

}  // namespace syncgrad::launch
