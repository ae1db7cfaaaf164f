// Micro-batches and optimizer steps (see training_step.h).
#include "tools/train/training_step.h"

#include "autograd/autocast.h"
#include "profiler/events.h"
#include "syncgrad.h"
#include "tensor/memory_tag.h"
#include "tools/train/lr_schedule.h"

namespace syncgrad::train {

MicroBatchPlace place_in_step(const TrainingRun& run, const data::LoaderState& after, int epoch) {
  const int accumulate = run.config.accumulate;
  // A step ends after `accumulate` micro-batches or at the end of the epoch.
  const bool epoch_ended = after.epoch != epoch;
  MicroBatchPlace place;
  place.ends_step = epoch_ended || after.batches_consumed % accumulate == 0;
  place.begins_step = epoch_ended ? (run.batches_per_epoch - 1) % accumulate == 0
                                  : (after.batches_consumed - 1) % accumulate == 0;
  place.batches_consumed = after.batches_consumed;
  return place;
}

void train_micro_batch(TrainingRun& run, const data::Batch& batch, const MicroBatchPlace& place, int epoch) {
  const TrainConfig& c = run.config;
  if (place.begins_step) run.optimizer->zero_grad();
  Tensor loss;
  {
    profiler::Scope span("train", "forward");
    span.arg("step", run.position.step + 1);
    const DType amp_dtype = c.amp == AmpMode::kFp16 ? DType::f16 : DType::bf16;
    auto autocast_scope = autocast(run.autocast_device, amp_dtype, c.amp != AmpMode::kOff);
    loss = run.task->loss(*run.trained, batch);
  }
  Tensor scaled = run.scaler.scale(c.accumulate > 1 ? div(loss, Scalar(static_cast<double>(c.accumulate))) : loss);
  profiler::Scope span("train", "backward");  // with DDP's bucket reductions, waited for at its end
  span.arg("step", run.position.step + 1);
  if (run.ddp && !place.ends_step) {
    auto local_only = run.ddp->no_sync();
    scaled.backward();
  } else {
    scaled.backward();
  }
  run.losses.add(loss, {run.position.step + 1, epoch + 1, place.batches_consumed});
}

void optimizer_step(TrainingRun& run) {
  profiler::Scope span("train", "optimizer step");
  span.arg("step", run.position.step + 1);
  run.optimizer->set_lr(lr_at(run.config, run.world, run.position.step, run.total_steps));
  {
    MemoryTagGuard optimizer_memory(kOptimizerMemoryTag);
    run.scaler.step(*run.optimizer);  // a plain optimizer step unless --amp fp16 found inf/NaN gradients
  }
  run.scaler.update();
  ++run.position.step;
}

}  // namespace syncgrad::train
