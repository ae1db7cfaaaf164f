// Reducer: DistributedDataParallel's gradient synchronisation. It owns the buckets (flat gradient buffers),
// copies each parameter's gradient into its bucket from the parameter's post-accumulate hook (divided by the
// world size), launches a bucket's reduction the moment it is full -- always in bucket order, the same on
// every rank -- and, from an end-of-backward callback, waits for all of them and writes the averaged
// gradients back. After the first iteration it rebuilds the buckets in the order gradients became ready
// (rank 0's order, broadcast to all).
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distributed/comm_hook.h"
#include "distributed/host_values.h"
#include "distributed/process_group.h"
#include "distributed/static_graph.h"
#include "tensor/ops/factories.h"
#include "tensor/tensor.h"

namespace syncgrad::distributed {

// The largest bucket DDPOptions accepts, in MiB (1 TiB: far beyond any model, small enough for size_t bytes).
inline constexpr double kMaxBucketMiB = 1024.0 * 1024.0;

struct DDPOptions {
  double bucket_cap_mb = 25;  // (0, kMaxBucketMiB]
  double first_bucket_mb = 1;
  bool broadcast_buffers = true;
  bool gradient_as_bucket_view = false;
  bool find_unused_parameters = false;
  std::shared_ptr<CommHook> comm_hook = nullptr;  // null: allreduce_hook()
  // false: every bucket is launched only at the end of backward (for measuring what overlap buys).
  bool overlap = true;
  // Each synchronised backward also exchanges every rank's step (training forwards so far) and bucket plan,
  // so ranks that got out of step fail with a DesyncError naming them instead of mixing gradients of
  // different steps (one tiny allgather per step, sent ahead of the buckets).
  bool check_step_agreement = true;
  // The graph is the same every iteration (distributed/static_graph.h): a parameter's gradient may then arrive
  // more than once per backward (reentrant activation checkpointing, nn/checkpoint.h) and parameters the graph
  // never uses need no find_unused_parameters; the first backward records the graph (its buckets are all
  // launched at its end), a later change is a DistributedError naming the parameter.
  bool static_graph = false;
  // ZeRO-2: each bucket is reduce-scattered (reduce_scatter_hook.h) instead of allreduced, every rank keeping only
  // its shard of the averaged gradients (for ZeroRedundancyOptimizer::use_gradient_shards); param.grad is freed
  // once copied into its bucket and stays empty after backward. Buckets keep their initial plan (no rebuild in
  // gradient-ready order) so they stay the optimizer's segments. Not with gradient_as_bucket_view or another hook.
  bool gradient_sharding = false;
};

// Timing of the last synchronised backward.
struct DDPStats {
  double comm_seconds = 0;     // sum over buckets of the time their reduction ran
  double exposed_seconds = 0;  // time the end of backward waited for the step check and reductions still running
  size_t buckets = 0;
  size_t bytes = 0;            // gradient bytes reduced
  // From the first parameter gradient of the backward to the end of the autograd pass: the compute the
  // reductions can overlap with.
  double backward_compute_seconds = 0;
};

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  // Use create(): the parameters' hooks hold a weak reference to the reducer.
  static std::shared_ptr<Reducer> create(std::vector<std::pair<std::string, Tensor>> params,
                                         std::shared_ptr<ProcessGroup> group, DDPOptions options);

  void set_sync(bool on) { sync_ = on; }
  // Counts a training-mode forward (DistributedDataParallel::forward calls it).
  void note_forward() { ++forwards_; }
  bool sync() const { return sync_; }
  void set_comm_hook(std::shared_ptr<CommHook> hook);
  const std::shared_ptr<CommHook>& comm_hook() const { return hook_; }
  const DDPStats& last_stats() const { return stats_; }
  // The stats of the last kRecentSteps synchronised backward passes, oldest first.
  static constexpr size_t kRecentSteps = 20;
  const std::deque<DDPStats>& recent_stats() const { return recent_stats_; }
  // Each bucket's gradient bytes, in launch order.
  std::vector<size_t> bucket_bytes() const;
  // The parameters that got no gradient on this rank in the last synchronised backward (registration order).
  std::vector<std::string> unused_in_last_backward() const;
  int64_t iteration() const { return iteration_; }
  // Continues the count of synchronised backward passes (a resumed run's); not during backward. ValueError for
  // a negative count.
  void set_iteration(int64_t iteration);
  // Parameter names per bucket, in launch order.
  std::vector<std::vector<std::string>> bucket_names() const;
  // The parameter order the buckets were rebuilt in after the first backward (rank 0's gradient-ready order);
  // empty while they keep their initial plan. A resumed run adopts it, so that its first steps reduce each
  // gradient at the same place of the same bucket as the uninterrupted run did -- with more than two ranks a
  // sum's order, and so its last bits, depend on that place.
  const std::vector<int64_t>& rebuilt_order() const { return rebuilt_order_; }
  // Rebuilds the buckets in `order` (a permutation of the parameter indices) as the rebuild after the first
  // backward would; no rebuild follows. Not during backward. ValueError when `order` is not a permutation.
  void adopt_rebuilt_order(const std::vector<int64_t>& order);
  // What each rank's gradient is divided by before the buckets are summed: the group's size unless set
  // (DistributedDataParallel::join with divide_by_initial_world_size = false sets the ranks still training).
  // ValueError unless divisor >= 1.
  void set_gradient_divisor(int64_t divisor);
  // A rank that ran out of inputs under DistributedDataParallel::join takes its part in a synchronised
  // backward it does not run: the step check, every bucket (zeros, through the comm hook, in bucket order),
  // the used-parameter flags and the one-time rebuild, as a real backward would; its gradients are left alone.
  void shadow_backward();

  Reducer(std::vector<std::pair<std::string, Tensor>> params, std::shared_ptr<ProcessGroup> group,
          DDPOptions options);

 private:
  struct Bucket {
    GradBucket grad;
    std::vector<size_t> params;
    int64_t numel = 0;  // the buffer's elements (padded to a multiple of the ranks under gradient_sharding)
    TensorOptions options;
    size_t pending = 0;
    std::shared_ptr<Work> work;
  };

  void build_buckets(const std::vector<size_t>& order);
  // Allocates the bucket's buffer and its per-parameter views when it has none.
  void materialize(Bucket& bucket);
  // Under gradient_sharding a bucket's full-size buffer lives only from its first gradient until its
  // reduce-scatter completed (between backwards each rank keeps the 1/W shards): drops the buffers of launched
  // buckets whose Work is done; every launched bucket's when `all` (their Works were waited for).
  void release_reduced_buffers(bool all);
  // Parameter `index`'s slot in its bucket, shaped like the parameter.
  const Tensor& view_of(size_t index) {
    Bucket& bucket = buckets_[bucket_of_[index]];
    materialize(bucket);
    return bucket.grad.gradients[slot_of_[index]];
  }
  void on_gradient_ready(size_t index);
  void begin_backward();
  void reset_for_backward();
  void mark_ready(size_t index, bool used);
  void launch_full_buckets();
  void finish_backward(bool shadow = false);
  void write_back(const std::vector<char>& globally_used);
  void rebuild_in_ready_order();
  void rebuild(const std::vector<size_t>& order);
  void launch_step_check();
  void verify_step_check();
  int64_t plan_fingerprint() const;

  std::vector<std::pair<std::string, Tensor>> params_;
  std::shared_ptr<ProcessGroup> group_;
  DDPOptions options_;
  std::shared_ptr<CommHook> hook_;
  std::optional<StaticGraph> static_graph_;

  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter -> bucket
  std::vector<size_t> slot_of_;    // parameter -> position in its bucket

  bool sync_ = true;
  bool in_backward_ = false;
  bool rebuilt_ = false;
  int64_t iteration_ = 0;
  int64_t divisor_ = 0;  // 0: the group's size
  size_t next_launch_ = 0;
  std::vector<char> ready_;
  std::vector<char> used_;
  std::vector<size_t> ready_order_;
  std::vector<int64_t> rebuilt_order_;
  DDPStats stats_;
  std::deque<DDPStats> recent_stats_;
  std::chrono::steady_clock::time_point backward_start_;  // the first gradient of the running backward
  int64_t forwards_ = 0;
  std::vector<int64_t> step_check_mine_;      // [training forwards so far, bucket plan fingerprint]
  std::optional<PendingValues> step_check_;  // every rank's step_check_mine_, gathered during forward
};

}  // namespace syncgrad::distributed
