// DistributedDataParallel's communication state in a checkpoint (comm_state(): the synchronised step count and
// the comm hook's state, e.g. PowerSGD's error feedback and warm-start factors). Each rank's state is its own:
// they are gathered so that rank 0 saves all of them in one file of the checkpoint ("rank<R>.<key>"), and each
// rank takes its own part back. At another world size the per-rank hook state cannot carry over: it is reset
// (with a warning saying so) and only the step count continues.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "distributed/ddp.h"

namespace syncgrad::distributed {

using CommState = std::vector<std::pair<std::string, Tensor>>;

// Every rank's ddp.comm_state() on every rank, as "rank<R>.<key>" (host tensors). Collective over ddp's group.
// ValueError when the ranks' states differ in their entries or shapes (ranks built with different hooks).
CommState gather_comm_state(const DistributedDataParallel& ddp);

// Loads this rank's part of `gathered` (saved by a job of saved_world ranks) into ddp. At another world size:
// rank 0's step count, a fresh hook state, and a warning (when the saved hook had state). Errors name `file`:
// ValueError when this rank's part is missing or the hook cannot take it.
void restore_comm_state(DistributedDataParallel& ddp, const CommState& gathered, int64_t saved_world,
                        const std::string& file, std::ostream& warnings);

}  // namespace syncgrad::distributed
