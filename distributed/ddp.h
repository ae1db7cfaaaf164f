// DistributedDataParallel: wraps a model so that every rank trains its own shard of the data while the
// gradients are averaged across ranks during backward (bucketed allreduce overlapped with the rest of
// backward). Construction checks that all ranks hold the same parameters and copies rank 0's parameters and
// buffers to every rank. Use module() to reach (and save) the wrapped model: its state has no "module."
// prefix; load_model_state() also accepts state saved with one.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "distributed/ddp_join.h"
#include "distributed/ddp_logging.h"
#include "distributed/init.h"
#include "distributed/reducer.h"
#include "nn/module.h"

namespace syncgrad::distributed {

class DistributedDataParallel : public nn::Module {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                          DDPOptions options = {});
  // On the default group (init_process_group()).
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module, DDPOptions options = {});

  // Broadcasts rank 0's buffers first when broadcast_buffers (and training), then runs the model.
  Tensor forward(const Tensor& input) override;
  // The same for a model with several inputs (its forward_many), e.g. ddp({tokens, mask}).
  Tensor forward_many(const std::vector<Tensor>& inputs) override;

  // The guard for ranks with different numbers of batches (see ddp_join.h): auto join = ddp.join();
  [[nodiscard]] Join join(JoinOptions options = {}) { return Join(*this, options); }

  const std::shared_ptr<nn::Module>& module() const { return module_; }
  ProcessGroup& process_group() const { return *group_; }
  const DDPOptions& options() const { return options_; }
  // With DDPOptions::gradient_sharding: this rank's shard of each bucket's averaged gradients after the last
  // synchronised backward (undefined before the first); empty otherwise.
  std::vector<Tensor> gradient_shards() const;

  // While the guard lives, backward only accumulates local gradients; the next backward outside it
  // reduces the accumulated sum once.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(Reducer& reducer) : reducer_(&reducer), previous_(reducer.sync()) { reducer.set_sync(false); }
    ~NoSyncGuard() { reducer_->set_sync(previous_); }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    Reducer* reducer_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*reducer_); }

  void register_comm_hook(std::shared_ptr<CommHook> hook) { reducer_->set_comm_hook(std::move(hook)); }
  const DDPStats& last_stats() const { return reducer_->last_stats(); }
  // The set-up and the averages of the last steps (at most Reducer::kRecentSteps), like PyTorch's
  // _get_ddp_logging_data() (distributed/ddp_logging.h).
  DDPLoggingData logging_data() const;
  std::vector<std::vector<std::string>> bucket_names() const { return reducer_->bucket_names(); }
  // Synchronised backward passes so far (no_sync backwards do not count).
  int64_t synced_steps() const { return reducer_->iteration(); }
  // This rank's communication state for an exact continuation: "iteration" (the synchronised steps, a 1-element
  // int64 tensor: PowerSGD compresses from an iteration on), "bucket_order" (int64 parameter indices, once the
  // buckets were rebuilt in gradient-ready order: see Reducer::rebuilt_order) and the comm hook's state_dict()
  // as "hook.<key>".
  std::vector<std::pair<std::string, Tensor>> comm_state() const;
  // Takes back comm_state()'s output (before the next backward). ValueError naming the entry it cannot take.
  void load_comm_state(const std::vector<std::pair<std::string, Tensor>>& state);
  // Copies rank 0's buffers to every rank now (forward does it when broadcast_buffers).
  void broadcast_buffers();

 private:
  friend class Join;
  // The buffer broadcast, the join round and the step count of a forward.
  void before_forward();
  // Keeps a training forward's time for logging_data().
  void record_forward_time(std::chrono::steady_clock::time_point start);
  void broadcast_buffers_from(int root);

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  DDPOptions options_;
  std::shared_ptr<Reducer> reducer_;
  std::deque<double> recent_forward_seconds_;  // the last Reducer::kRecentSteps training forwards
  Join* join_ = nullptr;  // the join guard this model is in
};

// Loads `state` into `model`, first removing a "module." prefix that every key carries (state saved from a
// DistributedDataParallel wrapper rather than from its module()).
void load_model_state(nn::Module& model, nn::StateDict state, bool strict = true);

}  // namespace syncgrad::distributed
