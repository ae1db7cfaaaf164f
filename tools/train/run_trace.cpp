// syncgrad-train's timeline trace: the step window, the clock offset, the one file (see run_trace.h).
#include "tools/train/run_trace.h"

#include <cstdio>

#include "distributed/init.h"
#include "distributed/trace_gather.h"
#include "tools/train/training_run.h"

namespace syncgrad::train {

RunTrace::RunTrace(const TrainingRun& run) : run_(run) {
  const TrainConfig& c = run.config;
  if (c.trace_file.empty()) return;
  profiler::check_trace_path(c.trace_file);  // checked again before writing: the run may have been long
  profiler::set_thread_name("main (training loop)");
  trace_.emplace(profiler::TraceOptions{.min_detail_us = c.trace_min_us}, false);
  if (run.job.group()) clock_ = distributed::measure_clock_offset(*distributed::default_store(), run.rank, run.world);
}

void RunTrace::begin_step(int64_t step) {
  if (!trace_) return;
  if (run_.config.trace_steps.contains(step)) {
    if (trace_->is_recording()) return;  // the same step again after an epoch's end: its span goes on
    trace_->start();
    step_start_ns_ = profiler::now_ns();
  } else {
    trace_->stop();
  }
}

void RunTrace::end_step(int64_t step) {
  if (!trace_ || !trace_->is_recording()) return;
  profiler::record_span("train", "step " + std::to_string(step), step_start_ns_, profiler::now_ns(), "step", step);
  ++steps_recorded_;
  if (!run_.config.trace_steps.every_step() && step >= run_.config.trace_steps.last) trace_->stop();
}

void RunTrace::finish(std::ostream& out) {
  if (!trace_) return;
  trace_->stop();
  const std::string& path = run_.config.trace_file;
  if (steps_recorded_ == 0 && run_.rank == 0) {
    out << "warning: --trace-steps " << to_string(run_.config.trace_steps) << ": no step in it ran (the run ended "
        << "after step " << run_.position.step << "); the trace holds no steps\n";
  }
  if (run_.job.group()) {
    const distributed::JobTraceSummary summary = distributed::write_job_trace(
        *trace_, *distributed::default_store(), run_.rank, run_.world, clock_, path);
    char line[256];
    std::snprintf(line, sizeof line, "trace: wrote %s (%.1f KiB, %d ranks, clocks aligned to within %.0f us)\n",
                  path.c_str(), summary.bytes / 1024.0, summary.ranks, summary.worst_round_trip_ns / 2000.0);
    if (run_.rank == 0) out << line;
  } else {
    profiler::write_trace_file(path, profiler::trace_document({trace_->event_list_json(0, "rank 0")}, {}));
    out << "trace: wrote " << path << "\n";
  }
}

}  // namespace syncgrad::train
