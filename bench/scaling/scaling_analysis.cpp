// Building the profile, fitting the link, validating the model on the measured points and predicting curves.
#include "bench/scaling/scaling_analysis.h"

#include <fmt/format.h>

#include <cmath>

#include "models/models.h"
#include "tensor/check.h"
#include "tensor/errors.h"
#include "bench/scaling/in_process_runs.h"
#include "bench/scaling/synthetic_task.h"

namespace syncgrad::bench {
namespace {

// The Gloo group reduces messages up to this size on its synchronous path (GlooSmallAllreduce::kMaxBytes in
// distributed/gloo_small_allreduce.h, a private header).
constexpr double kGlooSmallMessageBytes = 8 << 20;

StepProfile build_profile(const ScalingOptions& options, const Measurements& m) {
  StepProfile profile;
  profile.batch_per_worker = options.base.batch;
  const MeasuredPoint* single = m.find("main", "single", 1);
  SYNCGRAD_CHECK(single != nullptr, ValueError, "scaling analysis: the single-worker baseline was not measured");
  const StepRecord& s = single->result.split;
  profile.data_seconds = s.data_wait;
  profile.forward_seconds = s.forward - s.loss;
  profile.loss_seconds = s.loss;
  profile.backward_seconds = s.backward;
  profile.optimizer_seconds = s.optimizer;
  profile.ddp_backward_seconds = s.backward;
  if (const MeasuredPoint* ddp = m.find("main", "ddp", 1)) {
    profile.ddp_backward_seconds = ddp->result.split.backward;
    profile.gradients = ddp->result.gradients;
  }
  const SyntheticTask task(options.base.model);
  for (const auto& [name, buffer] : models::make_model(options.base.model)->named_buffers()) {
    profile.buffer_bytes.push_back(static_cast<double>(buffer.nbytes()));
  }
  profile.input_bytes = task.input_bytes_per_example() * static_cast<double>(options.base.batch);
  profile.output_bytes = task.output_bytes_per_example() * static_cast<double>(options.base.batch);
  measure_dp_serial_costs(options.base, profile);
  profile.parameter_bytes = profile.gradient_bytes();
  return profile;
}

// Median allreduce times per size over the repeats of the largest DDP run.
std::optional<LinkFit> fit_measured_link(const ScalingOptions& options, const Measurements& m) {
  const int p = options.workers.back();
  const MeasuredPoint* point = m.find("main", "ddp", p);
  if (point == nullptr || p < 2) return std::nullopt;
  std::vector<AllreduceSample> samples = point->repeats.front().allreduce;
  for (size_t i = 0; i < samples.size(); ++i) {
    std::vector<double> times;
    for (const RunResult& r : point->repeats) times.push_back(r.allreduce.at(i).seconds);
    samples[i].seconds = median(times);
  }
  if (samples.size() < 2) return std::nullopt;
  return fit_link(samples, p, kGlooSmallMessageBytes);
}

// The run's communication hook as the model sees it: the collectives its launch() and finish() issued per step
// (rank 0's record); with replayed_costs, those in other dtypes than f32 (f16, bf16) cost their replayed time,
// the others a ring allreduce of their bytes on the link.
std::vector<HookCollective> hook_collectives_of(const RunResult& result, bool replayed_costs) {
  std::vector<HookCollective> hooks;
  for (const CollectiveCost& c : result.collectives) {
    if (c.origin.call == CollectiveOrigin::Call::kOther) continue;
    const bool measured = replayed_costs && c.dtype != DType::f32 && c.replay_seconds > 0;
    hooks.push_back({c.origin.bucket, c.origin.call == CollectiveOrigin::Call::kFinish, c.bytes,
                     measured ? c.replay_seconds : -1});
  }
  return hooks;
}

DdpSettings settings_of(const RunConfig& c, const RunResult& result, const StepProfile& profile, bool replayed_costs) {
  DdpSettings settings;
  settings.first_bucket_bytes = c.first_bucket_mb * (1 << 20);
  settings.bucket_bytes = c.bucket_cap_mb * (1 << 20);
  settings.overlap = c.overlap;
  if (c.hook == "allreduce") return settings;
  settings.hook_collectives = hook_collectives_of(result, replayed_costs);
  // Without a record (older results): what the ranks handed to the group, spread over the buckets' allreduces.
  if (settings.hook_collectives.empty() && profile.gradient_bytes() > 0) {
    settings.wire_fraction = result.payload_bytes_per_step / profile.gradient_bytes();
  }
  return settings;
}

std::vector<int> predicted_worker_counts(int max_workers) {
  std::vector<int> counts;
  for (int p = 1; p <= max_workers; p *= 2) counts.push_back(p);
  return counts;
}

}  // namespace

// The profile a DDP point is predicted from: the one-worker profile, with a communication hook's backward
// (its encoding included), gradient times and decoding taken from the same hook's one-worker run.
StepProfile profile_for(const StepProfile& base, const RunConfig& c, const Measurements& m) {
  if (c.hook == "allreduce") return base;
  const MeasuredPoint* one = m.find("hooks", "ddp", 1, c.hook);
  if (one == nullptr) return base;
  StepProfile profile = base;
  profile.ddp_backward_seconds = one->result.split.backward;
  profile.hook_finish_seconds = one->result.split.hook_finish;
  if (!one->result.gradients.empty()) profile.gradients = one->result.gradients;
  return profile;
}

// The slowest rank's compute thread per step: on a core or waiting for one (0 without the kernel's figures).
double busiest_compute_thread(const RunResult& r) {
  double busiest = 0;
  for (const ThreadLoad& l : r.thread_load) busiest = std::max(busiest, l.main_cpu + l.main_wait);
  return busiest;
}

// Compute slowdown of a measured point. DDP: the slowest rank's compute thread per step (on a core or waiting
// for one) over the profile's compute -- the ranks' compute threads share the cores with each other, with their
// Gloo threads and with other processes, and wait for a core after every hand-off. DP (threads of this
// process), or without the kernel's figures: the forward's time over the one-worker run's of the same mode.
double compute_scale_of(const MeasuredPoint& point, const StepProfile& profile, const Measurements& m) {
  const RunResult& r = point.result;
  const double busiest = busiest_compute_thread(r);
  if (r.config.mode == "ddp" && busiest > 0 && profile.ddp_compute_seconds() > 0) {
    return busiest / profile.ddp_compute_seconds();
  }
  const MeasuredPoint* one = m.find("main", r.config.mode, 1);
  return one && one->result.split.forward > 0 ? r.split.forward / one->result.split.forward : 1;
}

bool Validation::within() const { return std::abs(error) <= std::max(kTargetError, noise); }

const PredictedPoint* PredictedCurve::at(int workers) const {
  for (const PredictedPoint& p : points) {
    if (p.workers == workers) return &p;
  }
  return nullptr;
}

double measured_step_seconds(const RunResult& r) {
  return r.samples_per_second > 0 ? static_cast<double>(r.config.workers * r.config.batch) / r.samples_per_second : 0;
}

std::string verdict_at_8(const PredictedCurve& curve) {
  const PredictedPoint* p = curve.at(8);
  if (p == nullptr) return "no prediction at 8 workers";
  const bool dp_under_3 = p->dp_speedup < 3;
  const double efficiency = p->ddp_speedup / 8;
  const bool ddp_linear = efficiency >= kNearLinear;
  return fmt::format("DP {:.2f}x ({}under 3x), DDP {:.2f}x = {:.0f}% efficiency ({}near linear): the claim {}",
                     p->dp_speedup, dp_under_3 ? "" : "not ", p->ddp_speedup, 100 * efficiency,
                     ddp_linear ? "" : "not ", dp_under_3 && ddp_linear ? "holds" : "does not hold");
}

Analysis analyse(const ScalingOptions& options, const Measurements& m) {
  Analysis a;
  a.profile = build_profile(options, m);
  a.measured_link = fit_measured_link(options, m);
  for (const std::string mode : {"dp", "ddp"}) {
    for (int p : options.workers) {
      if (const MeasuredPoint* at_p = m.find("main", mode, p)) {
        a.contention[mode][p] = compute_scale_of(*at_p, a.profile, m);
      }
    }
  }

  for (const MeasuredPoint& point : m.points) {
    const RunConfig& c = point.result.config;
    if (c.mode == "single") continue;
    Validation v;
    v.label = c.mode + " " + std::to_string(c.workers) + (c.workers == 1 ? " worker" : " workers");
    if (point.group != "main") v.label += ", " + point.group + " " + point.setting;
    v.point = &point;
    if (c.mode == "dp") {
      v.compute_scale = compute_scale_of(point, a.profile, m);
      v.predicted = predict_dp_threads(a.profile, c.workers, Machine{v.compute_scale, c.loader});
    } else {
      if (c.workers > 1 && !a.measured_link) continue;
      const Link link = a.measured_link ? a.measured_link->link : Link{};
      const StepProfile profile = profile_for(a.profile, c, m);
      v.compute_scale = compute_scale_of(point, profile, m);
      v.predicted = predict_ddp(profile, c.workers, link, settings_of(c, point.result, profile, true),
                                Machine{v.compute_scale, c.loader, point.result.rank_skew_seconds});
      v.is_input = c.workers == 1;
    }
    v.mean_step = c.mode == "ddp" && busiest_compute_thread(point.result) > 0;
    v.measured_step_seconds = v.mean_step ? point.result.mean_step_seconds : point.result.split.step;
    v.error = (v.predicted.step_seconds - v.measured_step_seconds) / v.measured_step_seconds;
    v.noise = point.result.noise;
    a.validation.push_back(v);
  }

  if (!options.predict) return a;
  const MeasuredPoint* main_ddp = m.find("main", "ddp", options.workers.back());
  for (double scale : options.compute_scales) {
    for (const std::string& name : options.predict_links) {
      PredictedCurve curve;
      curve.compute_scale = scale;
      if (name == "measured") {
        // This machine as it is: its compute speed is the measured one.
        if (!a.measured_link || scale != 1) continue;
        curve.link = a.measured_link->link;
        curve.dp_on_threads = true;
      } else if (name == "given") {
        curve.link = {"given", options.link_alpha_us * 1e-6, options.link_beta_gbs * 1e9,
                      "given on the command line (--link-alpha-us, --link-beta-gbs)"};
      } else {
        curve.link = link_preset(name);
      }
      // On this machine the data time is part of the step; on devices, loader workers are assumed to hide it.
      const Machine machine{scale, curve.dp_on_threads && options.base.loader};
      DdpSettings settings;
      settings.first_bucket_bytes = options.base.first_bucket_mb * (1 << 20);
      settings.bucket_bytes = options.base.bucket_cap_mb * (1 << 20);
      if (main_ddp) settings = settings_of(options.base, main_ddp->result, a.profile, false);
      const double single = predict_single(a.profile, machine).samples_per_second;
      for (int p : predicted_worker_counts(options.predict_max_workers)) {
        PredictedPoint point;
        point.workers = p;
        point.ddp = predict_ddp(a.profile, p, curve.link, settings, machine);
        point.dp = curve.dp_on_threads ? predict_dp_threads(a.profile, p, machine)
                                       : predict_dp_devices(a.profile, p, curve.link, machine);
        point.ddp_speedup = point.ddp.samples_per_second / single;
        point.dp_speedup = point.dp.samples_per_second / single;
        curve.points.push_back(point);
      }
      a.curves.push_back(curve);
    }
  }
  return a;
}

}  // namespace syncgrad::bench
