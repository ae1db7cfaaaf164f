// One collective a DDP rank issued in a training step, as CountingProcessGroup records it, and its replay: the
// same message (kind, op, dtype and the very values) timed again on the group after training, with both ranks
// lined up by a barrier and nothing else running -- this machine's link cost for that message. The scaling
// model costs compression hooks' messages this way: the Gloo group reduces f16 and bf16 element by element
// through f32 conversions whose speed depends on the values (small gradients are subnormal in f16), so a fit
// to f32 allreduce times does not carry over to them.
#pragma once

#include <nlohmann/json.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "tensor/tensor.h"

namespace syncgrad::bench {

enum class CollectiveKind { kAllreduce, kBroadcast, kAllgather };

// Where a collective came from: a communication hook's launch() (during backward, as soon as the bucket is
// full) or finish() (after all buckets' launched collectives completed, one bucket after another), or
// elsewhere (DDP's step check, the buffers' broadcast).
struct CollectiveOrigin {
  enum class Call { kOther, kLaunch, kFinish };
  Call call = Call::kOther;
  int bucket = -1;  // the bucket's index for launch/finish
};

struct CollectiveRecord {
  CollectiveKind kind = CollectiveKind::kAllreduce;
  CollectiveOrigin origin;
  DType dtype = DType::f32;
  double bytes = 0;
  distributed::ReduceOp op = distributed::ReduceOp::kSum;
  int root = 0;
  int64_t numel = 0;
  // A copy of the input's bytes as it was handed over, kept outside the tensor allocator so that recording
  // does not show in the run's peak memory (not serialised).
  std::vector<std::byte> values;
};

// What the model needs of a recorded collective: where it came from, its size and its replayed time.
struct CollectiveCost {
  CollectiveKind kind = CollectiveKind::kAllreduce;
  CollectiveOrigin origin;
  DType dtype = DType::f32;
  double bytes = 0;
  double replay_seconds = 0;  // median of the replays' wall time; 0 when not replayed (one worker)
  // The replays' time on a core, summed over this process's threads (the Gloo threads do the copies through
  // the sockets and the reductions), per replay; 0 when not replayed or not reported by the kernel.
  double replay_cpu_seconds = 0;
};

// Times each record `repeats` times on `group` (every rank must pass the same records in the same order) and
// returns the medians, the first two repeats discarded as warm-up. Each repeat works on a fresh copy of the
// recorded values.
std::vector<CollectiveCost> replay_collectives(distributed::ProcessGroup& group,
                                               const std::vector<CollectiveRecord>& records, int repeats = 9);
// The records' costs without timing them (one worker: there is no link to time).
std::vector<CollectiveCost> costs_of(const std::vector<CollectiveRecord>& records);
// The same step's collectives replayed from several steps (equal sequences): their times averaged position by
// position -- the reductions' speed depends on the values (f16 slows down as gradients shrink in training),
// so one step alone is not typical. Empty input: empty.
std::vector<CollectiveCost> average_over_steps(const std::vector<std::vector<CollectiveCost>>& steps);

nlohmann::json to_json(const CollectiveCost& cost);
CollectiveCost collective_cost_from_json(const nlohmann::json& j);

}  // namespace syncgrad::bench
