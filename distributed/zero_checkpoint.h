// Sharded checkpoints of a ZeroRedundancyOptimizer: every rank writes only its own shard of the optimizer state,
// no rank ever holds the whole of it, and the save loads back at any world size.
//   DIR/optimizer-shard-<r>-of-<W>.safetensors  rank r's local_state_dict() ("optimizer.state.<segment>.<name>",
//                                               S elements each; the groups' options in its metadata)
//   DIR/optimizer-shards.json                   the index, written by rank 0 once every shard file is complete:
//                                               {"format", "world_size", "files", "first_bucket_mb",
//                                                "bucket_cap_mb", "param_numels"}
// All files are written atomically (temporary file, fsync, rename). Loading reads the index and every shard file,
// rebuilds the saved layout (the same parameters, the saved world size and bucket caps), assembles the unsharded
// state and keeps this rank's shard of it under the current world size.
#pragma once

#include <string>
#include <vector>

#include "distributed/zero_redundancy_optimizer.h"
#include "distributed/zero_state.h"

namespace syncgrad::optim {

inline constexpr const char* kZeroShardIndexFileName = "optimizer-shards.json";

// The name of rank `rank`'s shard file among `world` ranks: "optimizer-shard-<rank>-of-<world>.safetensors".
std::string zero_shard_file_name(int rank, int world);

// Collective (every rank of the optimizer's group): writes this rank's shard file into the existing directory
// `dir`, waits for all ranks, then rank 0 writes the index. IOError naming the file when one cannot be written.
void save_sharded_optimizer_state(const std::string& dir, const ZeroRedundancyOptimizer& zero);

// The unsharded state (a plain optimizer's layout over `params`) of the sharded save in `dir`, made at any world
// size. ValueError naming the file for a missing or malformed index, a missing shard file, parameters other than
// the saved ones (count or sizes), or shards that do not fit together.
OptimizerStateDict read_sharded_optimizer_state(const std::string& dir, const std::vector<Tensor>& params);

// read_sharded_optimizer_state + zero.load_state_dict (no communication; every rank calls it).
void load_sharded_optimizer_state(const std::string& dir, ZeroRedundancyOptimizer& zero);

}  // namespace syncgrad::optim
