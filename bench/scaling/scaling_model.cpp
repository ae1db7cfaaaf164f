// The scaling model's formulas (see scaling_model.h and docs/SCALING.md).
#include "bench/scaling/scaling_model.h"

#include <algorithm>
#include <string>

#include "distributed/bucket_plan.h"
#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::bench {
namespace {

void check_workers(int p, const char* what) {
  SYNCGRAD_CHECK(p >= 1, ValueError, what, ": worker count must be >= 1, got ", p);
}

StepPrediction finish(StepPrediction prediction, const StepProfile& profile, int p) {
  prediction.step_seconds = prediction.data_seconds + prediction.forward_seconds + prediction.backward_seconds +
                            prediction.exposed_comm_seconds + prediction.rank_skew_seconds +
                            prediction.optimizer_seconds;
  prediction.samples_per_second =
      prediction.step_seconds > 0 ? static_cast<double>(p * profile.batch_per_worker) / prediction.step_seconds : 0;
  return prediction;
}

}  // namespace

double Timeline::exposed_seconds() const { return std::max(0.0, comm_end_seconds - compute_end_seconds); }

std::vector<BucketLoad> plan_bucket_loads(const std::vector<GradientReady>& gradients, double first_bucket_bytes,
                                          double bucket_bytes, double time_scale) {
  std::vector<distributed::ParamInfo> info;
  std::vector<size_t> order;
  for (size_t i = 0; i < gradients.size(); ++i) {
    // plan_buckets counts bytes from numel and dtype: express each gradient's bytes as f32 elements.
    info.push_back({static_cast<int64_t>(gradients[i].bytes / 4), DType::f32, Device{}});
    order.push_back(i);
  }
  std::vector<BucketLoad> loads;
  for (const auto& members : distributed::plan_buckets(info, order, static_cast<size_t>(first_bucket_bytes),
                                                       static_cast<size_t>(bucket_bytes))) {
    BucketLoad load;
    for (size_t i : members) {
      load.ready_seconds = std::max(load.ready_seconds, gradients[i].ready_seconds * time_scale);
      load.bytes += gradients[i].bytes;
    }
    loads.push_back(load);
  }
  return loads;
}

Timeline overlap_timeline(const std::vector<BucketLoad>& buckets, double compute_end, double comm_available,
                          bool overlap, const std::function<double(size_t)>& cost) {
  Timeline timeline;
  timeline.compute_end_seconds = compute_end;
  double link_free = comm_available;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const BucketLoad& bucket = buckets[i];
    BucketTiming t;
    t.ready_seconds = overlap ? bucket.ready_seconds : std::max(bucket.ready_seconds, compute_end);
    t.start_seconds = std::max(t.ready_seconds, link_free);
    t.end_seconds = t.start_seconds + cost(i);
    link_free = t.end_seconds;
    timeline.buckets.push_back(t);
  }
  timeline.comm_end_seconds = buckets.empty() ? compute_end : std::max(compute_end, link_free);
  return timeline;
}

double step_check_seconds(int p, const Link& link) {
  return ring_allreduce_seconds(16.0 * p, p, link);
}

StepPrediction predict_single(const StepProfile& profile, const Machine& machine) {
  const double c = machine.compute_scale;
  StepPrediction s;
  s.data_seconds = machine.data_wait ? profile.data_seconds * c : 0;
  s.forward_seconds = (profile.forward_seconds + profile.loss_seconds) * c;
  s.backward_seconds = profile.backward_seconds * c;
  s.optimizer_seconds = profile.optimizer_seconds * c;
  return finish(s, profile, 1);
}

StepPrediction predict_ddp(const StepProfile& profile, int p, const Link& link, const DdpSettings& settings,
                           const Machine& machine) {
  check_workers(p, "predict_ddp");
  const double c = machine.compute_scale;
  StepPrediction s;
  s.data_seconds = machine.data_wait ? profile.data_seconds * c : 0;
  s.forward_seconds = (profile.forward_seconds + profile.loss_seconds) * c;
  s.optimizer_seconds = profile.optimizer_seconds * c;
  const double last_ready = profile.last_ready_seconds() * c;
  // After the last gradient: the end-of-backward work of DDP (waits, writing the averages back).
  const double tail = std::max(0.0, profile.ddp_backward_seconds * c - last_ready);
  if (p == 1) {
    s.backward_seconds = (profile.ddp_backward_seconds + profile.hook_finish_seconds) * c;
    return finish(s, profile, p);
  }
  // The buffers' broadcasts (each a small allreduce in the Gloo group) run one after another before forward.
  double broadcasts = 0;
  for (double bytes : profile.buffer_bytes) broadcasts += ring_allreduce_seconds(bytes, p, link);
  const auto buckets = plan_bucket_loads(profile.gradients, settings.first_bucket_bytes, settings.bucket_bytes, c);
  double first_ready = last_ready;
  for (const GradientReady& g : profile.gradients) first_ready = std::min(first_ready, g.ready_seconds * c);
  const double check = settings.step_check ? step_check_seconds(p, link) : 0;
  const auto hook_cost = [&](const HookCollective& h) {
    return h.seconds >= 0 ? h.seconds : ring_allreduce_seconds(h.bytes, p, link);
  };
  // Bucket i's launched collectives (a hook's whose bucket is past the plan's count to the last bucket).
  const auto cost = [&](size_t i) {
    if (settings.hook_collectives.empty()) {
      return ring_allreduce_seconds(buckets[i].bytes * settings.wire_fraction, p, link);
    }
    double seconds = 0;
    for (const HookCollective& h : settings.hook_collectives) {
      const size_t bucket = std::min(static_cast<size_t>(std::max(h.bucket, 0)), buckets.size() - 1);
      if (!h.in_finish && bucket == i) seconds += hook_cost(h);
    }
    return seconds;
  };
  const Timeline timeline = overlap_timeline(buckets, last_ready, first_ready + check, settings.overlap, cost);
  // After the wait: the hook's finish() calls one bucket after another, each decoding and waiting for its own
  // collectives (serial, all exposed).
  double finish_collectives = 0;
  for (const HookCollective& h : settings.hook_collectives) finish_collectives += h.in_finish ? hook_cost(h) : 0;
  s.comm_seconds = broadcasts + finish_collectives;
  for (const BucketTiming& b : timeline.buckets) s.comm_seconds += b.end_seconds - b.start_seconds;
  s.exposed_comm_seconds = broadcasts + timeline.exposed_seconds() + finish_collectives;
  s.rank_skew_seconds = machine.rank_skew_seconds;
  s.backward_seconds = last_ready + tail + profile.hook_finish_seconds * c;
  return finish(s, profile, p);
}

StepPrediction predict_dp_threads(const StepProfile& profile, int p, const Machine& machine) {
  check_workers(p, "predict_dp_threads");
  const double c = machine.compute_scale;
  const double handoff = (p - 1) * profile.wake_seconds;
  StepPrediction s;
  // The serial parts run on the caller's thread while the other workers wait: no contention (scale 1).
  s.data_seconds = machine.data_wait ? profile.data_seconds * p : 0;
  s.replicate_seconds = p * profile.replica_copy_seconds;
  s.forward_seconds = profile.forward_seconds * c + handoff + profile.loss_seconds * p;
  s.gather_seconds = p * profile.output_copy_seconds;
  s.scatter_seconds = p * profile.output_copy_seconds;  // the output's gradient in pieces; inputs are views
  s.backward_seconds = profile.backward_seconds * c + handoff;
  s.reduce_seconds = profile.gradient_clone_seconds + (p - 1) * profile.gradient_add_seconds;
  s.optimizer_seconds = profile.optimizer_seconds;
  s.comm_seconds = s.replicate_seconds + s.scatter_seconds + s.gather_seconds + s.reduce_seconds;
  s.exposed_comm_seconds = s.comm_seconds;
  return finish(s, profile, p);
}

StepPrediction predict_dp_devices(const StepProfile& profile, int p, const Link& link, const Machine& machine) {
  check_workers(p, "predict_dp_devices");
  const double c = machine.compute_scale;
  const int others = p - 1;
  const double handoff = others * profile.wake_seconds;
  StepPrediction s;
  s.data_seconds = machine.data_wait ? profile.data_seconds * p : 0;  // one loader fills the whole batch
  if (others > 0) {
    s.replicate_seconds = others * transfer_seconds(profile.parameter_bytes, link);
    s.scatter_seconds =
        others * (transfer_seconds(profile.input_bytes, link) + transfer_seconds(profile.output_bytes, link));
    s.gather_seconds = others * transfer_seconds(profile.output_bytes, link);
    s.reduce_seconds = others * (transfer_seconds(profile.gradient_bytes(), link) + profile.gradient_add_seconds * c);
  }
  s.forward_seconds = profile.forward_seconds * c + handoff + profile.loss_seconds * c * p;
  s.backward_seconds = profile.backward_seconds * c + handoff;
  s.optimizer_seconds = profile.optimizer_seconds * c;
  s.comm_seconds = s.replicate_seconds + s.scatter_seconds + s.gather_seconds + s.reduce_seconds;
  s.exposed_comm_seconds = s.comm_seconds;
  return finish(s, profile, p);
}

}  // namespace syncgrad::bench
