// syncgrad-train --trace FILE: the run's timeline. Every rank records (profiler/trace.h) the steps of
// --trace-steps -- each "step N" span from the end of the previous step (so the wait for data is in it) to the
// end of its optimizer step, with forward, backward, optimizer step, checkpoint and evaluation spans inside and
// the library's own spans (DDP buckets, process-group workers, data workers, autograd nodes) beside them --
// its clock offset to rank 0 is measured through the store at start (distributed/trace_clock.h), and at the
// end rank 0 gathers every rank's events and writes the one file (distributed/trace_gather.h).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

#include "distributed/trace_clock.h"
#include "profiler/trace.h"

namespace syncgrad::train {

struct TrainingRun;

class RunTrace {
 public:
  // Nothing is recorded without --trace. Every rank of a job takes part in the clock measurement.
  explicit RunTrace(const TrainingRun& run);
  RunTrace(const RunTrace&) = delete;
  RunTrace& operator=(const RunTrace&) = delete;

  // Before the data of optimizer step `step` (from 1) is fetched, and after that step.
  void begin_step(int64_t step);
  void end_step(int64_t step);
  // After the run (every rank): rank 0 writes the file and says so on `out`.
  void finish(std::ostream& out);

 private:
  const TrainingRun& run_;
  std::optional<profiler::Trace> trace_;
  distributed::ClockOffset clock_;
  int64_t step_start_ns_ = 0;
  int64_t steps_recorded_ = 0;
};

}  // namespace syncgrad::train
