// Resuming a run and saving it every --checkpoint-every steps and at the end of each epoch (see
// training_checkpoint.h).
#include "tools/train/training_checkpoint.h"

#include <filesystem>
#include <iostream>

#include "data/data_position.h"
#include "distributed/collective_caller.h"
#include "distributed/comm_state_io.h"
#include "distributed/elastic.h"
#include "tensor/check.h"
#include "tensor/generator.h"
#include "profiler/events.h"
#include "tensor/io/checkpoint_directory.h"
#include "tools/train/rank0_work.h"

namespace syncgrad::train {
namespace {

void record_position(TrainingRun& run) {
  TrainingPosition& position = run.position;
  const data::DataPosition next = data::data_position(*run.loader, run.world);
  position.epoch = static_cast<int>(next.epoch);
  position.batch_in_epoch = next.batches_consumed;
  position.world_size = run.world;
  position.epoch_start = next.epoch_start;
  position.samples_consumed = next.global_position;
  position.distributed_order = run.shard != nullptr;
  position.rng_seed = default_generator().seed();
  position.rng_offset = default_generator().offset();
  position.grad_scaler = run.scaler.state_dict();
}

// The step directory saved (rank 0), or "".
std::string save(TrainingRun& run) {
  const TrainConfig& c = run.config;
  record_position(run);
  run.losses.check();
  if (!run.rank0_saves) return "";
  profiler::Scope span("train", "checkpoint");  // rank 0 writes, the others wait for it
  span.arg("step", run.position.step);
  // Collective: each rank's comm hook state (PowerSGD's error feedback) goes into rank 0's checkpoint.
  if (run.ddp) run.position.comm_state = distributed::gather_comm_state(*run.ddp);
  // Collective: the ZeRO shards of the optimizer state, consolidated on rank 0 in the plain optimizer's layout
  // (so the checkpoint resumes at any world size, with or without --zero).
  if (run.zero) run.zero->consolidate_state_dict(0);
  std::string dir;
  on_rank0_while_others_wait(run, "saving the checkpoint", [&] {
    dir = save_checkpoint(*run.checkpoint_lock, c.model, *run.model, *run.optimizer, run.position, c,
                          c.keep_checkpoints);
    run.out << "checkpoint saved to " << dir << " (step " << run.position.step << ")\n";
  });
  return dir;
}

}  // namespace

void resume_from_checkpoint(TrainingRun& run) {
  const TrainConfig& c = run.config;
  std::string path = c.resume;
  if (c.resume == kResumeAuto) {
    SYNCGRAD_CHECK(!c.checkpoint_dir.empty(), ValueError,
                   "--resume auto picks the newest checkpoint of --checkpoint-dir; pass --checkpoint-dir too (or "
                   "--resume with a checkpoint directory)");
    if (io::list_checkpoints(c.checkpoint_dir).empty() &&
        !std::filesystem::exists(std::filesystem::path(c.checkpoint_dir) / kLegacyCheckpointFileName)) {
      run.out << "--resume auto: no checkpoint in " << c.checkpoint_dir << " yet; starting from the beginning\n";
      return;
    }
    path = c.checkpoint_dir;
  }
  const CheckpointLocation location = locate_checkpoint(path);
  std::ostream& warnings = run.rank == 0 ? std::cerr : run.silent;
  run.position = load_checkpoint(location, c.model, *run.model, *run.optimizer, warnings);
  run.resumed_from = location.directory;
  default_generator().set_state(run.position.rng_seed, run.position.rng_offset);
  const int64_t saved_world = run.position.world_size;  // 0: not recorded (an older checkpoint)
  if (saved_world > 0 && saved_world != run.world) {
    distributed::check_world_size_change(saved_world, run.world, c.elastic, "checkpoint " + location.directory,
                                         "pass --elastic (or set SYNCGRAD_ELASTIC=1)");
    SYNCGRAD_CHECK(run.position.distributed_order, ValueError, "checkpoint ", location.directory,
                   " was saved by a single process without --elastic, whose data order (a RandomSampler's) cannot "
                   "be split among ", run.world, " ranks; resume it with 1 process (runs that may change their "
                   "world size later start with --elastic)");
  }
  run.out << "resumed from " << location.directory << " at epoch " << run.position.epoch + 1 << ", step "
          << run.position.step << "\n";
}

void watch_for_preemption(TrainingRun& run) {
  const TrainConfig& c = run.config;
  // rank0_saves (rank 0 has a --checkpoint-dir) is agreed by every rank, so either all ranks poll the watch
  // (a collective) or none does.
  SYNCGRAD_CHECK(c.checkpoint_every_minutes == 0 || run.rank0_saves, ValueError,
                 "--checkpoint-every-minutes ", c.checkpoint_every_minutes,
                 " saves checkpoints, but rank 0 has no --checkpoint-dir to save them in; pass --checkpoint-dir");
  if (!run.rank0_saves) return;  // nothing to save: SIGTERM keeps its default effect
  run.preemption.emplace(distributed::PreemptionOptions{
      .checkpoint_interval = std::chrono::duration<double>(c.checkpoint_every_minutes * 60)});
}

void save_if_due(TrainingRun& run) {
  const TrainConfig& c = run.config;
  const int64_t step = run.position.step;
  const data::LoaderState next = run.loader->state();
  const bool ends_epoch = next.batches_consumed == 0;
  const bool ends_run = (c.max_steps > 0 && step >= c.max_steps) || (ends_epoch && next.epoch >= c.epochs);
  const distributed::PreemptionDecision decision =
      run.preemption ? run.preemption->poll(run.job.group().get()) : distributed::PreemptionDecision{};
  if (decision.stop && !ends_run) {
    const std::string dir = save(run);
    // Rank 0 serves the job's store unless syncgrad-launch does (srun, mpirun, variables set by hand): it must
    // not exit, taking the store with it, before every rank has read there that the save is done.
    const distributed::CollectiveCaller caller("barrier at checkpoint");
    run.job.barrier();
    throw Preempted{distributed::PreemptionWatch::received_signal(), step, dir};
  }
  const bool every_n_steps = c.checkpoint_every > 0 && step % c.checkpoint_every == 0;
  if ((every_n_steps || decision.save) && !ends_run && !ends_epoch) save(run);
}

void end_epoch(TrainingRun& run) { save(run); }

}  // namespace syncgrad::train
