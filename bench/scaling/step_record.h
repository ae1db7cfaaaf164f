// The timing of measured training steps: one StepRecord per step, their medians as a PhaseSplit, and the
// statistics the bench reports (median, the spread it calls noise).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace syncgrad::bench {

// Seconds of one step, by phase: step ~ data_wait + forward + backward + exposed_comm + optimizer. comm is the
// time the communication ran, overlapped or not.
struct StepRecord {
  double data_wait = 0;
  double forward = 0;   // forward and loss (DataParallel: without its replicate, scatter and gather)
  double loss = 0;      // the loss alone (part of forward)
  double backward = 0;  // compute only: without the exposed communication (and DataParallel's reduce)
  double exposed_comm = 0;
  double comm = 0;
  double optimizer = 0;  // zero_grad + step
  // DDP with a communication hook (TimingCommHook): its launch() calls (inside backward) and its finish()
  // calls (after the wait; not part of backward).
  double hook_launch = 0, hook_finish = 0;
  double step = 0;       // wall time of the whole step
  // DataParallel's communication, serial on the caller's thread: together its exposed_comm.
  double replicate = 0, scatter = 0, gather = 0, reduce = 0;
};

// The median of each phase over steps (each phase's own median: they need not add up to step).
StepRecord median_split(const std::vector<StepRecord>& steps);

double median(std::vector<double> values);
// Half the interquartile range over the median: the relative noise of a set of timings (0 for < 2 values).
double relative_spread(std::vector<double> values);

nlohmann::json to_json(const StepRecord& record);
StepRecord step_record_from_json(const nlohmann::json& j);

}  // namespace syncgrad::bench
