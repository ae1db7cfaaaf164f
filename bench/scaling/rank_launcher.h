// Starting the ranks of a DDP measurement the way syncgrad-launch does (tools/launch/): this process serves
// the job's TCPStore, every rank gets torchrun's environment with OMP_NUM_THREADS=1, their output is prefixed
// [rankN], and when one rank fails the others are stopped.
#pragma once

#include <string>
#include <vector>

namespace syncgrad::bench {

// Runs `command` once per rank, `world` ranks on this machine, until all ended. DistributedError naming the
// failing rank's exit status (its own message went to stderr, prefixed) when any did not succeed.
void launch_ranks(int world, const std::vector<std::string>& command);

}  // namespace syncgrad::bench
