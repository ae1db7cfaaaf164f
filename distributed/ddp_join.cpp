// Join: the per-forward round (an allgather of every rank's state), the shadowing loop of a rank that ran out
// of inputs, and the copy of a last rank's parameters and buffers to all once every rank ran out.
#include "distributed/ddp_join.h"

#include <exception>
#include <string>

#include "autograd/grad_mode.h"
#include "distributed/ddp.h"
#include "distributed/host_values.h"
#include "nn/normalization.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

// The dotted names of the model's BatchNorm layers whose statistics are synchronised across ranks.
void find_sync_batch_norms(const nn::Module& module, const std::string& prefix, std::vector<std::string>& found) {
  const auto* batch_norm = dynamic_cast<const nn::BatchNorm*>(&module);
  if (batch_norm && batch_norm->stats_sync()) found.push_back(prefix.empty() ? "(the model)" : prefix);
  for (const auto& [name, child] : module.named_children()) {
    find_sync_batch_norms(*child, prefix.empty() ? name : prefix + "." + name, found);
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

}  // namespace

Join::Join(DistributedDataParallel& ddp, JoinOptions options)
    : ddp_(&ddp), options_(options), exceptions_at_entry_(std::uncaught_exceptions()) {
  if (!options_.enable) return;
  SYNCGRAD_CHECK(ddp.join_ == nullptr, DistributedError,
                 "DistributedDataParallel::join: this model is already inside a join guard; use one guard at a time");
  ddp.reducer_->comm_hook()->check_join();
  // A shadowed backward arrives at no parameter, which a static graph's record would take for a changed graph;
  // ZeRO-2's shards were not shadowed in any test: both refused rather than risk a wrong step.
  SYNCGRAD_CHECK(!ddp.options().static_graph && !ddp.options().gradient_sharding, ValueError,
                 "DistributedDataParallel::join: not supported with static_graph or gradient_sharding (ZeRO-2); "
                 "give every rank the same number of batches (DistributedSampler pads), or drop those options");
  if (!options_.throw_on_early_termination) {
    std::vector<std::string> layers;
    find_sync_batch_norms(*ddp.module(), "", layers);
    if (!layers.empty()) {
      const std::string more = layers.size() > 1 ? " and " + std::to_string(layers.size() - 1) + " more" : "";
      throw ValueError("DistributedDataParallel::join: the model has SyncBatchNorm layer(s) (" + layers.front() + more +
                       "), whose forward collectives a rank that ran out of inputs cannot shadow; construct the join "
                       "with throw_on_early_termination = true (every rank then stops with an error as soon as one "
                       "runs out), or give every rank the same number of batches");
    }
  }
  ddp.join_ = this;
  attached_ = true;
}

Join::~Join() noexcept(false) {
  if (std::uncaught_exceptions() > exceptions_at_entry_) {
    detach();
    return;
  }
  finish();
}

void Join::detach() {
  if (!attached_) return;
  attached_ = false;
  ddp_->join_ = nullptr;
  ddp_->reducer_->set_gradient_divisor(ddp_->group_->size());
}

void Join::finish() {
  if (finished_) return;
  finished_ = true;
  if (!attached_) return;
  try {
    ddp_->reducer_->comm_hook()->check_join();  // a hook registered inside the guard
    shadow_until_all_joined();
    synchronise_replicas();
  } catch (...) {
    detach();
    throw;
  }
  detach();
}

Join::Round Join::exchange(bool training, const Forward& forward) {
  ProcessGroup& group = *ddp_->group_;
  const std::vector<int64_t> mine = {training ? 1 : 0, forward.counted ? 1 : 0, forward.broadcasts ? 1 : 0,
                                     forward.syncs ? 1 : 0};
  ++rounds_;
  std::vector<std::vector<int64_t>> all;
  const std::string where = "DistributedDataParallel::join (rank " + std::to_string(group.rank()) + ", forward " +
                            std::to_string(rounds_) + " inside the guard)";
  try {
    all = PendingValues::allgather(group, mine).wait();
  } catch (const TimeoutError& e) {
    throw TimeoutError(where + ": the other ranks did not reach this forward's join round (" + e.what() +
                       "); a rank left the join guard with an error, or runs collectives the others do not");
  } catch (const PeerError& e) {
    throw PeerError(where + ": " + e.what() + "; a rank left the join guard with an error or exited");
  }
  Round round;
  std::vector<int> joined;
  for (int r = 0; r < group.size(); ++r) (all[r][0] ? round.training : joined).push_back(r);
  if (round.training.empty()) return round;
  last_training_ = round.training;
  const std::vector<int64_t>& first = all[round.training.front()];
  round.forward = {first[1] != 0, first[2] != 0, first[3] != 0};
  for (int r : round.training) {
    SYNCGRAD_CHECK(all[r] == first, DesyncError, where, ": the ranks still training disagree about this forward (rank ",
                   round.training.front(), " [training forward, buffer broadcast, synchronised backward] = [",
                   first[1], ", ", first[2], ", ", first[3], "], rank ", r, " = [", all[r][1], ", ", all[r][2], ", ",
                   all[r][3], "]); every rank must run the same sequence of forwards, modes and no_sync steps");
  }
  if (options_.throw_on_early_termination && !joined.empty()) {
    throw EarlyTerminationError(where + ": rank(s) " + rank_list(joined) + " ran out of inputs while rank(s) " +
                                rank_list(round.training) + " still train; throw_on_early_termination stops every "
                                "rank here. Give every rank the same number of batches to train them all to the end");
  }
  return round;
}

int Join::notify_forward(const Forward& forward) {
  const Round round = exchange(true, forward);
  if (!options_.divide_by_initial_world_size) {
    ddp_->reducer_->set_gradient_divisor(static_cast<int64_t>(round.training.size()));
  }
  return round.training.front();
}

void Join::shadow_until_all_joined() {
  Reducer& reducer = *ddp_->reducer_;
  for (;;) {
    const Round round = exchange(false, {});
    if (round.training.empty()) return;
    ++shadowed_;
    if (round.forward.broadcasts) ddp_->broadcast_buffers_from(round.training.front());
    if (round.forward.counted) {
      reducer.note_forward();
      if (round.forward.syncs) reducer.shadow_backward();
    }
  }
}

void Join::synchronise_replicas() {
  if (last_training_.empty()) return;  // no rank ran a forward inside the guard: the replicas never diverged
  source_rank_ = last_training_.front();
  NoGradGuard no_grad;
  ProcessGroup& group = *ddp_->group_;
  std::vector<std::shared_ptr<Work>> works;
  for (const auto& [name, p] : ddp_->module_->named_parameters()) works.push_back(group.broadcast(p, source_rank_));
  for (const auto& [name, b] : ddp_->module_->named_buffers()) works.push_back(group.broadcast(b, source_rank_));
  for (auto& work : works) work->wait();
}

}  // namespace syncgrad::distributed
