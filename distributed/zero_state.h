// Conversions between a ZeroRedundancyOptimizer's per-rank shard state (the inner optimizer's state_dict:
// "state.<segment>.<name>" flat tensors of S elements, "state.<segment>.step") and the unsharded layout of a
// plain optimizer over the parameters ("state.<param>.<name>" shaped like the parameter, "state.<param>.step").
// Both directions take a ShardLayout, so a state saved at one world size is re-sharded for any other.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "distributed/shard_layout.h"
#include "optim/optimizer.h"

namespace syncgrad::optim {

struct ZeroStateNames {
  std::vector<std::string> buffers;  // the inner optimizer's state buffer names
  bool counts_steps = false;
};

// The unsharded state from all W shard states (shard_states[r] = rank r's, for `layout` of W ranks), with one
// group of `options` over the layout's parameters. ValueError naming the rank and key when the shard states
// disagree (a segment with state on one rank but not another, another step count, a wrong length).
OptimizerStateDict assemble_zero_state(const distributed::ShardLayout& layout,
                                       const std::vector<OptimizerStateDict>& shard_states,
                                       const std::map<std::string, double>& options, const std::vector<Tensor>& params,
                                       const ZeroStateNames& names);

// Rank `rank`'s shard of an unsharded state (one group). ValueError naming the key for an unknown entry, a
// parameter index out of range, parameters of one segment with different step counts or some with state and
// some without; ShapeError for a buffer not shaped like its parameter.
OptimizerStateDict shard_zero_state(const distributed::ShardLayout& layout, int rank, const OptimizerStateDict& full,
                                    const std::vector<Tensor>& params, const ZeroStateNames& names);

}  // namespace syncgrad::optim
