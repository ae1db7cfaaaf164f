// Resuming a run and saving it at the end of each epoch (see training_checkpoint.h).
#include "tools/train/training_checkpoint.h"

#include "tensor/generator.h"
#include "tools/train/rank0_work.h"

namespace syncgrad::train {

void resume_from_checkpoint(TrainingRun& run) {
  const TrainConfig& c = run.config;
  run.position = load_checkpoint(c.resume, c.model, *run.model, *run.optimizer);
  default_generator().set_state(run.position.rng_seed, run.position.rng_offset);
  run.out << "resumed from " << c.resume << " at epoch " << run.position.epoch + 1 << ", step "
          << run.position.step << "\n";
}

void end_epoch(TrainingRun& run) {
  const TrainConfig& c = run.config;
  TrainingPosition& position = run.position;
  const data::LoaderState next = run.loader->state();
  position.epoch = static_cast<int>(next.epoch);
  position.batch_in_epoch = next.batches_consumed;
  position.rng_seed = default_generator().seed();
  position.rng_offset = default_generator().offset();
  position.grad_scaler = run.scaler.state_dict();
  run.losses.check();
  if (!run.rank0_saves) return;
  on_rank0_while_others_wait(run, "saving the checkpoint", [&] {
    save_checkpoint(c.checkpoint_dir, c.model, *run.model, *run.optimizer, position, c);
    run.out << "checkpoint saved to " << c.checkpoint_dir << " (step " << position.step << ")\n";
  });
}

}  // namespace syncgrad::train
