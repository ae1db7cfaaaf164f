// Checkpoints of a user's own training loop, in the step-directory layout of tensor/io/checkpoint_directory.h:
// everything an exact continuation needs — the model, the optimizer, the LR scheduler, the GradScaler, the
// default generator (dropout and other random ops), the DataLoader's (and so the DistributedSampler's) position
// mid-epoch, DistributedDataParallel's communication state (each rank's PowerSGD error feedback and warm-start
// factors), the step, the world size and the global batch size.
//   distributed::TrainingState state(group);
//   state.track(*model).track(optimizer).track(scheduler).track(loader);
//   state.restore(dir);                                  // the newest complete checkpoint of dir, if any
//   distributed::PreemptionWatch watch;
//   for (int64_t epoch = loader.state().epoch; state.step < steps; ++epoch) {
//     sampler->set_epoch(epoch);
//     for (data::Batch& batch : loader) {
//       ...forward, backward, optimizer.step()...
//       ++state.step;
//       const bool stop = watch.should_stop(group.get());
//       if (stop || state.step % 100 == 0) state.save(dir);  // collective: rank 0 writes, all ranks wait
//       if (stop) return distributed::kPreemptedExitStatus;
//     }
//   }
// The files: ROOT/step-NNNNNN/model.safetensors (the model's state_dict, PyTorch key names) and
// training_state.safetensors ("optimizer.<key>" tensors; in its metadata the position, the generator, the
// "grad_scaler.<key>" and "lr_scheduler.<key>" states and the optimizer's groups), with a tracked DDP
// comm_state.safetensors (every rank's DDP::comm_state(), "rank<R>.<key>", gathered to rank 0), listed in
// manifest.json.
//
// Another world size: restore() refuses a checkpoint saved by a job of another world size, naming both, unless
// allow_world_size_change(true) or SYNCGRAD_ELASTIC=1 (elastic resume; distributed/elastic.h): then the tracked
// DataLoader's DistributedSampler continues the epoch from its global position, splitting the samples no rank
// consumed among the new ranks (data/data_position.h), the per-rank batch stays (the global batch changes), and
// the comm hook's per-rank state starts afresh with a warning.
#pragma once

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include "data/loader.h"
#include "distributed/ddp.h"
#include "distributed/process_group.h"
#include "nn/module.h"
#include "optim/grad_scaler.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace syncgrad::distributed {

class TrainingState {
 public:
  // `group`: the job's process group (rank 0 writes, every rank reads), or null for a single process.
  explicit TrainingState(std::shared_ptr<ProcessGroup> group = nullptr);

  // What is saved and restored; each at most once. The model is the unwrapped module (not the DDP wrapper).
  TrainingState& track(nn::Module& model);
  TrainingState& track(optim::Optimizer& optimizer);
  TrainingState& track(optim::LRScheduler& scheduler);
  TrainingState& track(optim::GradScaler& scaler);
  TrainingState& track(data::DataLoader& loader);
  // The DDP wrapper's communication state (comm_state()), and its module() as the model.
  TrainingState& track(DistributedDataParallel& ddp);

  // Allows restore() to continue a checkpoint of another world size (elastic resume, above). Defaults to
  // SYNCGRAD_ELASTIC (read at construction; ValueError naming a value other than 0 or 1).
  TrainingState& allow_world_size_change(bool allow = true);

  int64_t step = 0;  // optimizer steps taken: the loop's counter, saved and restored

  // Collective: rank 0 writes ROOT/step-<step>/ (atomically, under ROOT's directory lock, held from the first
  // save on) and keeps the newest `keep` checkpoints (0: all), then every rank waits for it: on the default
  // group as long as rank 0's heartbeat goes on (run_on_rank0, so a save longer than the collective timeout is
  // fine; rank 0's error reaches the others), on another group at a barrier. Returns the step directory on
  // rank 0, "" on the others. ValueError when no model is tracked.
  std::string save(const std::string& root, int keep = 2);

  // Restores every tracked object from `path`: a ROOT (its newest complete checkpoint; newer incomplete or
  // damaged ones are skipped with a warning naming the file and the reason) or one step directory. Returns
  // false, changing nothing, when ROOT does not exist or holds no checkpoint (a fresh start). Errors name the
  // file: CorruptCheckpointError (io), ValueError for another model or optimizer, a world size or global batch
  // size that differs from the saved one (both named), or a tracked object whose state the file lacks.
  bool restore(const std::string& path, std::ostream& warnings = std::cerr);

  ~TrainingState();
  TrainingState(const TrainingState&) = delete;
  TrainingState& operator=(const TrainingState&) = delete;

 private:
  struct Tracked;
  std::shared_ptr<ProcessGroup> group_;
  std::unique_ptr<Tracked> tracked_;
};

}  // namespace syncgrad::distributed
