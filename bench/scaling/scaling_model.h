// The scaling model: predicts the step time of DistributedDataParallel and DataParallel for p workers from a
// one-worker StepProfile measured here and a Link (fitted to this machine's allreduce, or a preset).
//   DDP: every worker computes its step; bucket i's ring allreduce starts when backward has produced all of
//        its gradients and bucket i-1's allreduce is done; only what is left after backward is exposed. Before
//        forward, rank 0's buffers (BatchNorm statistics) are broadcast one after another, all exposed. A
//        communication hook replaces each bucket's allreduce by the collectives its launch() issues, and after
//        the last of them adds its finish() calls: their decoding (compute) and the collectives they wait for.
//   DP:  one driver replicates the parameters, scatters the batch, the replicas compute in parallel, outputs
//        are gathered and the loss computed on the first device, gradients reduced onto it, the optimizer
//        steps there -- all but the parallel regions serial.
#pragma once

#include <functional>
#include <vector>

#include "bench/scaling/link.h"
#include "bench/scaling/step_profile.h"

namespace syncgrad::bench {

// One collective a communication hook issues per step (recorded on one worker: bench/scaling/collective_record.h).
struct HookCollective {
  int bucket = 0;          // the bucket whose launch() or finish() issues it
  bool in_finish = false;  // finish() runs it and waits for it (after all launched collectives completed)
  double bytes = 0;
  // Its cost when measured (replayed on this machine's link); < 0: a ring allreduce of `bytes` on the link.
  double seconds = -1;
};

struct DdpSettings {
  double first_bucket_bytes = 1 << 20;
  double bucket_bytes = 25 << 20;
  bool overlap = true;
  double wire_fraction = 1;  // bytes sent per gradient byte (0.5 with fp16/bf16 compression), without hook_collectives
  bool step_check = true;    // the per-step agreement check sent ahead of the first bucket
  // The communication hook's collectives (empty: one allreduce of each bucket, scaled by wire_fraction).
  std::vector<HookCollective> hook_collectives;
};

// How the profile's times carry over to the predicted workers.
struct Machine {
  // Multiplies every compute time: this machine's slowdown when p workers share its cores (the compute
  // thread's time on a core and waiting for one, over the one-worker profile's compute), or for a preset the
  // speed of the predicted device relative to the core the profile was measured on.
  double compute_scale = 1;
  // false: loader workers hide batch loading (the data time is left out).
  bool data_wait = true;
  // DDP with more than one worker: how much longer each step waits for its slowest rank than the slowest rank's
  // mean compute -- the ranks' compute times fluctuate independently where they share cores (measured on this
  // machine; 0 for dedicated devices).
  double rank_skew_seconds = 0;
};

// step = data + forward + backward + exposed_comm + rank_skew + optimizer.
struct StepPrediction {
  double step_seconds = 0;
  double data_seconds = 0;
  double forward_seconds = 0;       // forward and loss (DP: the parallel region, host hand-off, loss on device 0)
  double backward_seconds = 0;      // compute only (with a communication hook's encoding and decoding)
  double exposed_comm_seconds = 0;  // DDP: what backward waits for at its end and the hook's finish() collectives;
                                    // DP: all of its communication
  double comm_seconds = 0;          // time the link is busy (DDP: sum over buckets)
  double optimizer_seconds = 0;
  double rank_skew_seconds = 0;     // DDP: waiting for the slowest rank beyond its mean compute (Machine)
  double replicate_seconds = 0, scatter_seconds = 0, gather_seconds = 0, reduce_seconds = 0;  // DP's exposed_comm
  double samples_per_second = 0;
};

struct BucketLoad {
  double ready_seconds = 0;  // when backward has produced all of the bucket
  double bytes = 0;
};

struct BucketTiming {
  double ready_seconds = 0, start_seconds = 0, end_seconds = 0;
};

struct Timeline {
  std::vector<BucketTiming> buckets;
  double compute_end_seconds = 0;  // the last gradient
  double comm_end_seconds = 0;     // the last allreduce (compute_end when there are no buckets)
  double exposed_seconds() const;  // max(0, comm_end - compute_end)
};

// DDP's buckets (distributed/plan_buckets over the gradients in ready order), each ready at its last
// gradient's time times `time_scale`.
std::vector<BucketLoad> plan_bucket_loads(const std::vector<GradientReady>& gradients, double first_bucket_bytes,
                                          double bucket_bytes, double time_scale);

// Bucket i starts at max(ready_i, end_{i-1}) -- with overlap off, at max(compute_end, end_{i-1}) -- and takes
// cost(i); the first cannot start before comm_available.
Timeline overlap_timeline(const std::vector<BucketLoad>& buckets, double compute_end, double comm_available,
                          bool overlap, const std::function<double(size_t)>& cost);

// The per-step agreement check: every rank's 16 bytes gathered by a sum of p x 16 bytes (host_values.h).
double step_check_seconds(int p, const Link& link);

// One worker without any wrapper.
StepPrediction predict_single(const StepProfile& profile, const Machine& machine);
// DistributedDataParallel with p workers (one per device or process) over `link`.
StepPrediction predict_ddp(const StepProfile& profile, int p, const Link& link, const DdpSettings& settings,
                           const Machine& machine);
// This machine's DataParallel: replicas on p threads sharing memory, so replicate/gather/reduce are memory
// copies on the caller's thread (the profile's replica_copy/output_copy/gradient_* times), the input chunks
// are views, and the caller runs replica 0, the loss on the whole batch and the optimizer alone.
StepPrediction predict_dp_threads(const StepProfile& profile, int p, const Machine& machine);
// DataParallel over p devices behind `link`: device 0 sends the parameters and each input chunk to the
// others one after another, receives their outputs and gradients the same way and sums the gradients.
StepPrediction predict_dp_devices(const StepProfile& profile, int p, const Link& link, const Machine& machine);

}  // namespace syncgrad::bench
