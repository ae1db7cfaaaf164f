// The construction-time check of DistributedDataParallel: every rank must wrap the same parameters (names,
// dtypes, shapes, in the same order) with the same DDP options, or nothing would line up in the buckets.
#pragma once

#include <string>
#include <vector>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

// `entries` describe this rank ("fc1.weight float32 [256, 784]", ..., then the options). A DesyncError names
// the first entry that differs and the ranks on each side.
void check_same_on_all_ranks(ProcessGroup& group, const std::vector<std::string>& entries, const std::string& what);

}  // namespace syncgrad::distributed
