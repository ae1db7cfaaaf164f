// The training loop: epochs of optimizer steps over the set-up run (training_run.h), with progress lines
// (progress_report.h) and a checkpoint at the end of each epoch (training_checkpoint.h), then the summary.
#include "tools/train/trainer.h"

#include <iostream>

#include "syncgrad.h"
#include "tensor/memory_tag.h"
#include "tensor/out_of_memory_context.h"
#include "tools/train/peak_rss.h"
#include "tools/train/progress_report.h"
#include "tools/train/run_trace.h"
#include "tools/train/sample_record.h"
#include "tools/train/training_checkpoint.h"
#include "tools/train/training_run.h"
#include "tools/train/training_step.h"

namespace syncgrad::train {
namespace {

bool reached_max_steps(const TrainingRun& run) {
  return run.config.max_steps > 0 && run.position.step >= run.config.max_steps;
}

// Trains `epoch` from the loader's position; true when --max-steps stopped it.
bool train_epoch(TrainingRun& run, ProgressReport& progress, SampleRecord& record, RunTrace& trace, int epoch) {
  if (run.shard) run.shard->set_epoch(epoch);
  run.batches_per_epoch = run.loader->num_batches();
  const data::LoaderState start = run.loader->state();
  record.begin_epoch(epoch, start.epoch == epoch ? start.batches_consumed : 0);
  trace.begin_step(run.position.step + 1);
  for (data::Batch& host_batch : *run.loader) {
    record.add_batch();
    const data::Batch batch = run.device.is_cpu() ? host_batch : on_device(host_batch, run.device);
    const MicroBatchPlace place = place_in_step(run, run.loader->state(), epoch);
    {
      // Activations grow with the batch: an allocation failing here is plausibly the batch's (see the hint).
      const OutOfMemoryContext oom("the forward and backward of a batch of " + std::to_string(batch.data.size(0)) +
                                       " samples (--batch-size " + std::to_string(run.config.batch_size) + ")",
                                   "try a smaller --batch-size (with --accumulate to keep the samples per step)");
      train_micro_batch(run, batch, place, epoch);
    }
    progress.add_examples(batch.data.size(0));
    if (!place.ends_step) continue;
    optimizer_step(run);
    progress.add_step(run);
    progress.report_if_due(run, epoch);
    save_if_due(run);
    trace.end_step(run.position.step);
    trace.begin_step(run.position.step + 1);
    if (reached_max_steps(run)) return true;
  }
  return false;
}

// After the last step; every rank evaluates its share of the held-out data (evaluation.h, progress_report.h).
TrainSummary summarize(TrainingRun& run, ProgressReport& progress, Allocator& tensor_memory) {
  TrainSummary summary;
  summary.rank = run.rank;
  summary.world_size = run.world;
  summary.samples = progress.examples();
  summary.wall_seconds = progress.training_seconds();
  summary.steps = run.position.step;
  summary.samples_per_second =
      summary.wall_seconds > 0 ? summary.samples * run.world / summary.wall_seconds : 0;
  summary.rate_unit = run.task->rate_unit();
  summary.units_per_example = run.task->units_per_example();
  summary.evaluation = progress.final_evaluation(run);
  summary.peak_tensor_bytes = tensor_memory.stats().peak_allocated_bytes;
  summary.optimizer_state_bytes = memory_tag_stats(kOptimizerMemoryTag).allocated_bytes;
  summary.device = run.device;
  summary.peak_rss_kib = peak_rss_kib();
  if (run.ddp) summary.ddp_logging = run.ddp->logging_data();
  return summary;
}

}  // namespace

TrainSummary run_training(const TrainConfig& c, std::ostream& console) {
  set_num_threads(c.threads);
  TrainingRun run(c, console);
  Allocator& tensor_memory =
      run.device.is_cpu() ? cpu_allocator() : device_backend(run.device.type)->allocator(run.device.index);
  tensor_memory.reset_peak();
  RunTrace trace(run);  // before the training clock starts: its clock measurement waits for every rank
  ProgressReport progress(run, tensor_memory);
  SampleRecord record(run.shard, c.batch_size, run.rank, std::cerr);
  bool stop = reached_max_steps(run);
  for (int epoch = run.position.epoch; epoch < c.epochs && !stop; ++epoch) {
    stop = train_epoch(run, progress, record, trace, epoch);
    end_epoch(run);
  }
  TrainSummary summary = summarize(run, progress, tensor_memory);
  trace.finish(console);
  return summary;
}

}  // namespace syncgrad::train
