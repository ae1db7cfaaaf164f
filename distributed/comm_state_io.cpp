// Gathering and restoring DDP's per-rank communication state (see comm_state_io.h).
#include "distributed/comm_state_io.h"

#include "distributed/host_values.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"

namespace syncgrad::distributed {
namespace {

// FNV-1a over the entries' names, dtypes and shapes: equal on every rank whose hook state has the same layout.
int64_t layout_fingerprint(const CommState& state) {
  uint64_t hash = 1469598103934665603ull;
  const auto mix = [&](uint64_t value) { hash = (hash ^ value) * 1099511628211ull; };
  for (const auto& [key, value] : state) {
    for (char c : key) mix(static_cast<unsigned char>(c));
    mix(static_cast<uint64_t>(value.dtype()) + 1000);
    for (int64_t size : value.sizes()) mix(static_cast<uint64_t>(size) + 2000);
  }
  return static_cast<int64_t>(hash);
}

std::string rank_prefix(int64_t rank) { return "rank" + std::to_string(rank) + "."; }

}  // namespace

CommState gather_comm_state(const DistributedDataParallel& ddp) {
  ProcessGroup& group = ddp.process_group();
  const CommState mine = ddp.comm_state();
  const int world = group.size();
  const auto layouts = PendingValues::allgather(group, {layout_fingerprint(mine)}).wait();
  for (int rank = 1; rank < world; ++rank) {
    SYNCGRAD_CHECK(layouts[rank][0] == layouts[0][0], ValueError, "saving the communication state: rank ", rank,
                   "'s comm hook state has other entries or shapes than rank 0's; every rank must use the same comm "
                   "hook on the same model");
  }
  CommState gathered;
  for (const auto& [key, value] : mine) {
    std::vector<Tensor> outputs;
    if (key == "iteration" || key == "bucket_order") {  // host values: whatever device the collectives take
      const Tensor input = value.contiguous();
      const int64_t* values = input.data_ptr<int64_t>();
      const auto all = PendingValues::allgather(group, std::vector<int64_t>(values, values + input.numel())).wait();
      for (int rank = 0; rank < world; ++rank) outputs.push_back(from_vector(all[rank], input.sizes()));
    } else {
      const Tensor input = value.contiguous();
      for (int rank = 0; rank < world; ++rank) outputs.push_back(empty(input.sizes(), TensorOptions{input.dtype()}));
      group.allgather(outputs, input)->wait();
    }
    for (int rank = 0; rank < world; ++rank) gathered.emplace_back(rank_prefix(rank) + key, outputs[rank]);
  }
  return gathered;
}

void restore_comm_state(DistributedDataParallel& ddp, const CommState& gathered, int64_t saved_world,
                        const std::string& file, std::ostream& warnings) {
  const int64_t world = ddp.process_group().size();
  const int64_t rank = ddp.process_group().rank();
  const std::string prefix = rank_prefix(saved_world == world ? rank : 0);
  CommState mine;
  bool hook_state = false;
  for (const auto& [key, value] : gathered) {
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string entry = key.substr(prefix.size());
    const bool per_rank = entry.rfind("hook.", 0) == 0;  // the step count and the bucket order are every rank's
    hook_state = hook_state || per_rank;
    if (saved_world == world || !per_rank) mine.emplace_back(entry, value);
  }
  SYNCGRAD_CHECK(!mine.empty(), ValueError, "checkpoint ", file, " holds no communication state \"", prefix,
                 "*\" for this rank (saved by a job of world size ", saved_world, ")");
  try {
    ddp.load_comm_state(mine);
  } catch (const ValueError& e) {
    throw ValueError("checkpoint " + file + ": " + e.what());
  }
  if (saved_world != world && hook_state && rank == 0) {
    warnings << "warning: " << file << ": the comm hook's per-rank state (PowerSGD's error feedback and warm-start "
             << "factors) was saved by " << saved_world << " ranks and cannot carry over to " << world
             << "; it starts afresh (the step count continues)\n";
  }
}

}  // namespace syncgrad::distributed
