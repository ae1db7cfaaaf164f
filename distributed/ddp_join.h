// Uneven inputs for DistributedDataParallel (PyTorch's Join with DDP's join hook): inside the guard, a rank
// that ran out of batches keeps taking part in the collectives of the ranks still training -- each of their
// forwards' buffer broadcast and each of their backwards' step check and gradient buckets, with zeros, in the
// same bucket order -- until every rank ran out. So ranks with 10 and 13 batches both finish, and the result
// is that of a run where the short rank's missing batches contribute nothing:
//
//   {
//     auto join = ddp.join();           // or dist::Join join(ddp, {.divide_by_initial_world_size = false});
//     for (auto& batch : my_batches) { opt.zero_grad(); loss(ddp(batch.x), batch.y).backward(); opt.step(); }
//   }                                   // here this rank shadows the others until all are done
//
// Each forward inside the guard costs one small allgather (which ranks still train, and what their forward
// does). When all ranks are done, the parameters and buffers of a rank that trained to the end are broadcast
// to all (a rank that ran out did not step its optimizer meanwhile; its optimizer state stays behind, as in
// PyTorch). Inside the guard every training forward must be followed by its backward, as without it.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/errors.h"

namespace syncgrad::distributed {

class DistributedDataParallel;

struct JoinOptions {
  // false: the guard does nothing (every rank must then run the same number of steps).
  bool enable = true;
  // true (PyTorch's default): gradients are always divided by the group's size, so a rank that ran out counts
  // as a rank with a zero gradient. false: divided by the number of ranks still training in that step.
  bool divide_by_initial_world_size = true;
  // true: as soon as one rank runs out, every rank throws EarlyTerminationError at its next forward (the rank
  // that ran out, at the end of the guard). Needed for models whose forward has collectives a rank that ran
  // out cannot shadow (SyncBatchNorm).
  bool throw_on_early_termination = false;
};

// Thrown on every rank under throw_on_early_termination once one rank ran out of inputs.
class EarlyTerminationError : public DistributedError {
 public:
  using DistributedError::DistributedError;
};

class Join {
 public:
  // ValueError naming the layer when the model has SyncBatchNorm layers and throw_on_early_termination is off,
  // or naming the comm hook when it cannot run under join (PowerSGD); DistributedError when `ddp` is already
  // inside a join.
  explicit Join(DistributedDataParallel& ddp, JoinOptions options = {});
  // Runs finish() unless an exception is leaving the guard's scope; then it returns at once, and the other
  // ranks' next collective fails with the group's timeout (or at once, if this process exits).
  ~Join() noexcept(false);
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;

  // This rank ran out of inputs: shadows the other ranks' steps until every rank ran out, then makes the
  // replicas identical again. Idempotent; the destructor calls it. TimeoutError / PeerError when a rank stops
  // answering, DesyncError when the ranks still training disagree about a step (one in no_sync, one not),
  // EarlyTerminationError under throw_on_early_termination.
  void finish();

  // The forwards of other ranks this rank shadowed after running out (so far).
  int64_t shadowed_steps() const { return shadowed_; }
  // After finish(): the rank whose parameters every rank took (one that trained to the last step); -1 when no
  // rank ran a forward inside the guard (nothing to copy).
  int source_rank() const { return source_rank_; }

 private:
  friend class DistributedDataParallel;

  // What a forward of a rank still training does.
  struct Forward {
    bool counted = false;     // a training forward with grad enabled (a backward follows)
    bool broadcasts = false;  // it broadcasts the buffers first
    bool syncs = false;       // its backward synchronises (not under no_sync)
  };
  // One round of the allgather every forward inside the guard runs.
  struct Round {
    std::vector<int> training;  // the ranks still training, ascending
    Forward forward;            // what their forward does (they agree)
  };

  // A rank still training, from DistributedDataParallel's forward: its part in this forward's round; returns
  // the rank to broadcast buffers from (the lowest still training: a rank that ran out has stale buffers).
  int notify_forward(const Forward& forward);
  Round exchange(bool training, const Forward& forward);
  void shadow_until_all_joined();
  void synchronise_replicas();
  void detach();

  DistributedDataParallel* ddp_;
  JoinOptions options_;
  int exceptions_at_entry_ = 0;
  bool attached_ = false;
  bool finished_ = false;
  int64_t rounds_ = 0;
  int64_t shadowed_ = 0;
  int source_rank_ = -1;
  std::vector<int> last_training_;  // the ranks still training in the last round that had any
};

}  // namespace syncgrad::distributed
