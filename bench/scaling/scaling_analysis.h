// From measurements to the scaling model: the one-worker StepProfile, this machine's link (fitted to the DDP
// ranks' allreduce sweep), the contention factor per worker count, the model's prediction of every measured
// point (the validation), and predicted curves for 1 .. N workers on each link.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/scaling/link_fit.h"
#include "bench/scaling/scaling_measure.h"
#include "bench/scaling/scaling_model.h"
#include "bench/scaling/scaling_options.h"

namespace syncgrad::bench {

constexpr double kTargetError = 0.15;  // the model's target: within 15% of every measured point
constexpr double kNearLinear = 0.8;    // "near linear": at least 80% scaling efficiency

struct Validation {
  std::string label;  // e.g. "ddp 2 workers" or "ddp 2 workers, buckets 5 MB"
  const MeasuredPoint* point = nullptr;
  StepPrediction predicted;
  // The step the prediction is compared with: the mean step (wall time / steps, averaged over the repeats)
  // where the compute came from the threads' accounting, which is a mean over the run (DDP); else the median
  // step (robust to the odd preempted step on a shared machine), like the forward's slowdown it is scaled by.
  double measured_step_seconds = 0;
  bool mean_step = false;            // which of the two
  double error = 0;                  // (predicted - measured) / measured
  double noise = 0;                  // the point's relative noise
  double compute_scale = 1;          // this point's compute slowdown (see Analysis::contention)
  bool is_input = false;             // the point the profile was taken from (not a test of the model)
  bool within() const;               // |error| <= 15% or within the noise
};

struct PredictedPoint {
  int workers = 0;
  StepPrediction dp, ddp;
  double dp_speedup = 0, ddp_speedup = 0;  // samples/s over the single worker's
};

struct PredictedCurve {
  Link link;
  double compute_scale = 1;
  bool dp_on_threads = false;  // this machine's DataParallel (the "measured" link) or devices behind the link
  std::vector<PredictedPoint> points;
  const PredictedPoint* at(int workers) const;
};

struct Analysis {
  StepProfile profile;
  std::optional<LinkFit> measured_link;
  // Compute slowdown with p workers on this machine, per mode ("dp", "ddp"), of the main runs (each validated
  // point uses its own run's the same way). DDP: the slowest rank's compute thread per step, on a core or
  // waiting for one (/proc/self/task/*/schedstat), over the one-worker profile's compute. DP (threads of this
  // process), or where the kernel does not report it: the forward time at p over the one at 1 worker.
  std::map<std::string, std::map<int, double>> contention;
  std::vector<Validation> validation;
  std::vector<PredictedCurve> curves;  // with --predict
};

Analysis analyse(const ScalingOptions& options, const Measurements& measurements);

// The profile a DDP point of configuration `c` is predicted from: `base`, or with a communication hook, its
// backward (the hook's encoding included), gradient times and decoding from the hook's one-worker run.
StepProfile profile_for(const StepProfile& base, const RunConfig& c, const Measurements& m);
// The slowest rank's (or the one worker's) compute thread per step, on a core or waiting for one; 0 without the
// kernel's figures.
double busiest_compute_thread(const RunResult& r);
// A measured point's compute slowdown (see Analysis::contention), with `profile` as from profile_for.
double compute_scale_of(const MeasuredPoint& point, const StepProfile& profile, const Measurements& m);

// The measured point's step time as its throughput gives it: workers x batch / samples/s.
double measured_step_seconds(const RunResult& result);

// "DP under 3x at 8 workers, DDP near linear (>= 80% efficiency)" on one curve, in words.
std::string verdict_at_8(const PredictedCurve& curve);

}  // namespace syncgrad::bench
