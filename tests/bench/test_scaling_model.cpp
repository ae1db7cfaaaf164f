// The scaling model (bench/scaling/): the ring allreduce cost, the bucket-overlap timeline on a hand-computed
// example, DDP and DataParallel step predictions term by term (communication hooks' collectives and decoding
// included), the compute slowdown from the threads' accounting, the link fit, the verdict at 8 workers, and
// the report helpers (medians, spreads, combining repeats, the SVG writer's escaping and range checks).
#include <doctest/doctest.h>

#include "tests/check_error.h"
#include "bench/scaling/ddp_rank.h"
#include "bench/scaling/link_fit.h"
#include "bench/scaling/scaling_analysis.h"
#include "bench/scaling/scaling_measure.h"
#include "bench/scaling/scaling_model.h"
#include "tools/plot/svg_plot.h"

using namespace syncgrad;
using namespace syncgrad::bench;
using namespace syncgrad::plot;
using doctest::Approx;

namespace {

constexpr double kMiB = 1 << 20;

// A link with 10 us latency and 1 GB/s.
Link test_link() { return {"test", 10e-6, 1e9, "a test"}; }

// Three gradients of 0.6 MiB, final 1, 2 and 3 ms into backward; forward 4 ms, backward 3.5 ms.
StepProfile test_profile() {
  StepProfile p;
  p.batch_per_worker = 32;
  p.data_seconds = 0.5e-3;
  p.forward_seconds = 4e-3;
  p.loss_seconds = 0.1e-3;
  p.backward_seconds = 3.2e-3;
  p.ddp_backward_seconds = 3.5e-3;
  p.optimizer_seconds = 1e-3;
  p.gradients = {{1e-3, 0, 0.6 * kMiB}, {2e-3, 0, 0.6 * kMiB}, {3e-3, 0, 0.6 * kMiB}};
  p.parameter_bytes = 1.8 * kMiB;
  p.input_bytes = 1e5;
  p.output_bytes = 1e3;
  p.replica_copy_seconds = 0.2e-3;
  p.gradient_clone_seconds = 0.25e-3;
  p.gradient_add_seconds = 0.3e-3;
  p.output_copy_seconds = 0.01e-3;
  p.wake_seconds = 0.05e-3;
  return p;
}

}  // namespace

TEST_CASE("ring allreduce: 2(p-1)/p * bytes/beta + 2(p-1) alpha") {
  const Link link = test_link();
  CHECK(ring_allreduce_seconds(1e6, 1, link) == 0);
  CHECK(ring_allreduce_seconds(1e6, 2, link) == Approx(1e-3 + 2 * 10e-6));
  CHECK(ring_allreduce_seconds(1e6, 4, link) == Approx(1.5e-3 + 6 * 10e-6));
  // Bandwidth term bounded by 2 bytes/beta however many workers; latency grows linearly.
  CHECK(ring_allreduce_seconds(1e6, 1024, link) == Approx(2 * 1023.0 / 1024 * 1e-3 + 2046 * 10e-6));
  CHECK(transfer_seconds(1e6, link) == Approx(1e-3 + 10e-6));
  testing::check_error<ValueError>([&] { ring_allreduce_seconds(1, 0, link); }, {"worker count", "0"});
}

TEST_CASE("link presets carry alpha, beta and a source; unknown names are listed") {
  for (const std::string name : {"pcie4", "nvlink4", "ib-hdr"}) {
    const Link link = link_preset(name);
    CHECK(link.alpha_seconds > 0);
    CHECK(link.beta_bytes_per_second > 1e9);
    CHECK(!link.source.empty());
  }
  CHECK(link_preset("nvlink4").beta_bytes_per_second > link_preset("pcie4").beta_bytes_per_second);
  testing::check_error<ValueError>([] { link_preset("token-ring"); }, {"token-ring", "pcie4", "nvlink4", "ib-hdr"});
}

TEST_CASE("buckets: gradients grouped in ready order with the first-bucket cap; ready at their last gradient") {
  const StepProfile p = test_profile();
  const auto loads = plan_bucket_loads(p.gradients, 1 * kMiB, 25 * kMiB, 1);
  REQUIRE(loads.size() == 2);  // 0.6 + 0.6 MiB closes the 1 MiB first bucket; the rest is left over
  CHECK(loads[0].bytes == Approx(1.2 * kMiB));
  CHECK(loads[0].ready_seconds == Approx(2e-3));
  CHECK(loads[1].bytes == Approx(0.6 * kMiB));
  CHECK(loads[1].ready_seconds == Approx(3e-3));
  const auto scaled = plan_bucket_loads(p.gradients, 0.5 * kMiB, 0.5 * kMiB, 2);
  REQUIRE(scaled.size() == 3);  // every gradient exceeds 0.5 MiB: one bucket each
  CHECK(scaled[2].ready_seconds == Approx(6e-3));
}

TEST_CASE("overlap timeline: a bucket starts when it is ready and the previous allreduce is done") {
  // Buckets ready at 1, 2 and 3 ms, 1.5 ms each, backward's compute ends at 3 ms:
  //   b0 1.0 -> 2.5, b1 max(2, 2.5) = 2.5 -> 4.0, b2 max(3, 4) = 4.0 -> 5.5: 2.5 ms exposed.
  const std::vector<BucketLoad> buckets = {{1e-3, 1}, {2e-3, 1}, {3e-3, 1}};
  const auto cost = [](size_t) { return 1.5e-3; };
  const Timeline on = overlap_timeline(buckets, 3e-3, 0, true, cost);
  REQUIRE(on.buckets.size() == 3);
  CHECK(on.buckets[0].start_seconds == Approx(1e-3));
  CHECK(on.buckets[1].start_seconds == Approx(2.5e-3));
  CHECK(on.buckets[2].start_seconds == Approx(4e-3));
  CHECK(on.comm_end_seconds == Approx(5.5e-3));
  CHECK(on.exposed_seconds() == Approx(2.5e-3));
  // Without overlap all three start after backward: 3 -> 4.5 -> 6 -> 7.5, 4.5 ms exposed.
  const Timeline off = overlap_timeline(buckets, 3e-3, 0, false, cost);
  CHECK(off.buckets[0].start_seconds == Approx(3e-3));
  CHECK(off.exposed_seconds() == Approx(4.5e-3));
  // The link is taken until 1.8 ms (the step check): 1.8 -> 3.3 -> 4.8 -> 6.3, 3.3 ms exposed.
  const Timeline late = overlap_timeline(buckets, 3e-3, 1.8e-3, true, cost);
  CHECK(late.buckets[0].start_seconds == Approx(1.8e-3));
  CHECK(late.exposed_seconds() == Approx(3.3e-3));
  // Cheap buckets are hidden completely.
  CHECK(overlap_timeline(buckets, 3e-3, 0, true, [](size_t) { return 0.5e-3; }).exposed_seconds() == Approx(0.5e-3));
  CHECK(overlap_timeline({}, 3e-3, 0, true, cost).exposed_seconds() == 0);
}

TEST_CASE("predict_ddp: data + forward + backward (last gradient + tail) + exposed + optimizer") {
  const StepProfile p = test_profile();
  const Link link = test_link();
  DdpSettings settings;
  settings.step_check = false;
  const Machine machine{1, true};
  const StepPrediction one = predict_ddp(p, 1, link, settings, machine);
  CHECK(one.step_seconds == Approx(0.5e-3 + 4.1e-3 + 3.5e-3 + 1e-3));
  CHECK(one.exposed_comm_seconds == 0);
  CHECK(one.samples_per_second == Approx(32 / one.step_seconds));
  // p = 2: buckets of 1.2 MiB (ready 2 ms) and 0.6 MiB (ready 3 ms); ring cost bytes/beta + 2 alpha.
  const double c0 = 1.2 * kMiB / 1e9 + 20e-6, c1 = 0.6 * kMiB / 1e9 + 20e-6;
  const double end = std::max(2e-3 + c0, 3e-3) + c1;
  const StepPrediction two = predict_ddp(p, 2, link, settings, machine);
  CHECK(two.exposed_comm_seconds == Approx(end - 3e-3));
  CHECK(two.comm_seconds == Approx(c0 + c1));
  CHECK(two.backward_seconds == Approx(3e-3 + 0.5e-3));  // last gradient + the 0.5 ms tail after it
  CHECK(two.step_seconds == Approx(0.5e-3 + 4.1e-3 + 3.5e-3 + (end - 3e-3) + 1e-3));
  CHECK(two.samples_per_second == Approx(64 / two.step_seconds));
  // Half the bytes on the wire (fp16 compression) exposes less; a compute scale stretches the compute.
  settings.wire_fraction = 0.5;
  CHECK(predict_ddp(p, 2, link, settings, machine).exposed_comm_seconds < two.exposed_comm_seconds);
  settings.wire_fraction = 1;
  const StepPrediction contended = predict_ddp(p, 2, link, settings, Machine{2, true});
  CHECK(contended.forward_seconds == Approx(2 * 4.1e-3));
  // The step check holds the link from the first gradient (1 ms) for a ring allreduce of 2 x 16 bytes: with
  // 1.5 ms latency per ring step the first bucket (ready at 2 ms) waits until 1 + 2 x 1.5 = 4 ms.
  const Link slow{"slow", 1.5e-3, 1e9, ""};
  const StepPrediction unchecked = predict_ddp(p, 2, slow, settings, machine);
  settings.step_check = true;
  const StepPrediction checked = predict_ddp(p, 2, slow, settings, machine);
  CHECK(checked.step_seconds - unchecked.step_seconds == Approx(4e-3 + 32 / 1e9 - 2e-3));
  // Buffers (BatchNorm statistics) are broadcast one after another before forward, all exposed.
  StepProfile with_buffers = p;
  with_buffers.buffer_bytes = {1e6, 1e3};
  const StepPrediction broadcasting = predict_ddp(with_buffers, 2, link, settings, machine);
  const double broadcasts = ring_allreduce_seconds(1e6, 2, link) + ring_allreduce_seconds(1e3, 2, link);
  const StepPrediction without = predict_ddp(p, 2, link, settings, machine);
  CHECK(broadcasting.exposed_comm_seconds - without.exposed_comm_seconds == Approx(broadcasts));
  CHECK(broadcasting.step_seconds - without.step_seconds == Approx(broadcasts));
  CHECK(predict_ddp(with_buffers, 1, link, settings, machine).exposed_comm_seconds == 0);
  testing::check_error<ValueError>([&] { predict_ddp(p, 0, link, settings, machine); }, {"worker count"});
}

TEST_CASE("predict_dp_devices: serial transfers from device 0, parallel compute, reduce onto device 0") {
  const StepProfile p = test_profile();
  const Link link = test_link();
  const Machine machine{1, false};
  const StepPrediction four = predict_dp_devices(p, 4, link, machine);
  const double t = 10e-6;  // alpha
  CHECK(four.replicate_seconds == Approx(3 * (t + 1.8 * kMiB / 1e9)));
  CHECK(four.scatter_seconds == Approx(3 * (t + 1e5 / 1e9) + 3 * (t + 1e3 / 1e9)));
  CHECK(four.gather_seconds == Approx(3 * (t + 1e3 / 1e9)));
  CHECK(four.reduce_seconds == Approx(3 * (t + 1.8 * kMiB / 1e9 + 0.3e-3)));
  CHECK(four.forward_seconds == Approx(4e-3 + 3 * 0.05e-3 + 4 * 0.1e-3));  // + hand-offs + the loss of 4 chunks
  CHECK(four.backward_seconds == Approx(3.2e-3 + 3 * 0.05e-3));
  CHECK(four.data_seconds == 0);  // loader workers hide it
  CHECK(four.exposed_comm_seconds ==
        Approx(four.replicate_seconds + four.scatter_seconds + four.gather_seconds + four.reduce_seconds));
  CHECK(four.step_seconds == Approx(four.forward_seconds + four.backward_seconds + four.exposed_comm_seconds + 1e-3));
  // One device: nothing to send, the plain step.
  const StepPrediction one = predict_dp_devices(p, 1, link, machine);
  CHECK(one.exposed_comm_seconds == 0);
  CHECK(one.step_seconds == Approx(predict_single(p, machine).step_seconds));
}

TEST_CASE("predict_dp_threads: this machine's DataParallel, copies on the caller's thread") {
  const StepProfile p = test_profile();
  const StepPrediction two = predict_dp_threads(p, 2, Machine{1.25, true});
  CHECK(two.data_seconds == Approx(2 * 0.5e-3));  // one loader fills both workers' batches
  CHECK(two.replicate_seconds == Approx(2 * 0.2e-3));
  CHECK(two.gather_seconds == Approx(2 * 0.01e-3));
  CHECK(two.scatter_seconds == Approx(2 * 0.01e-3));
  CHECK(two.reduce_seconds == Approx(0.25e-3 + 0.3e-3));
  CHECK(two.forward_seconds == Approx(4e-3 * 1.25 + 0.05e-3 + 2 * 0.1e-3));
  CHECK(two.backward_seconds == Approx(3.2e-3 * 1.25 + 0.05e-3));
  CHECK(two.optimizer_seconds == Approx(1e-3));  // alone on the caller's thread: no contention
  CHECK(two.step_seconds == Approx(two.data_seconds + two.forward_seconds + two.backward_seconds +
                                   two.exposed_comm_seconds + two.optimizer_seconds));
}

TEST_CASE("fit_link recovers alpha and beta from exact ring times, refuses what it cannot fit, flags noise") {
  const Link truth{"truth", 25e-6, 2e9, ""};
  std::vector<AllreduceSample> samples;
  for (double bytes : {4096.0, 65536.0, 1048576.0, 16777216.0}) {
    samples.push_back({bytes, ring_allreduce_seconds(bytes, 2, truth)});
  }
  const LinkFit fit = fit_link(samples, 2);
  CHECK(fit.link.alpha_seconds == Approx(25e-6).epsilon(1e-6));
  CHECK(fit.link.beta_bytes_per_second == Approx(2e9).epsilon(1e-6));
  CHECK(fit.worst_relative_error < 1e-9);
  testing::check_error<ValueError>([&] { fit_link(samples, 1); }, {">= 2 workers"});
  testing::check_error<ValueError>([&] { fit_link({samples[0]}, 2); }, {">= 2 allreduce sizes"});
  // Times that fall with size (a loaded machine): bandwidth alone through the origin, flagged in the source.
  const LinkFit noisy = fit_link({{1e3, 2e-3}, {1e6, 1e-3}}, 2);
  CHECK(noisy.times_did_not_grow);
  CHECK(noisy.link.alpha_seconds == 0);
  CHECK(noisy.link.beta_bytes_per_second > 0);
  CHECK(noisy.link.source.find("did not grow with size") != std::string::npos);
  CHECK_FALSE(fit.times_did_not_grow);
}

TEST_CASE("medians, spreads and combining repeats") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 2, 3}) == 2.5);
  CHECK(relative_spread({1, 1, 1, 1}) == 0);
  CHECK(relative_spread({1, 2, 3, 4, 5}) == Approx((4.0 - 2.0) / 2 / 3));
  RunResult a, b, c;
  for (RunResult* r : {&a, &b, &c}) r->steps = {StepRecord{.forward = 1, .step = 2}};
  a.samples_per_second = 90, b.samples_per_second = 100, c.samples_per_second = 110;
  a.peak_bytes = {5}, b.peak_bytes = {7}, c.peak_bytes = {6};
  const RunResult combined = combine_repeats({a, b, c});
  CHECK(combined.samples_per_second == 100);  // the median run
  CHECK(combined.noise == Approx(0.1));       // (110 - 90) / 2 / 100
  CHECK(combined.peak_bytes.front() == 7);    // the largest
  CHECK(combined.steps.size() == 3);
  CHECK(combined.split.forward == 1);
  testing::check_error<ValueError>([] { combine_repeats({}); }, {"no runs"});
}

TEST_CASE("render_svg: escaped text, one polyline per line series, refused ranges") {
  PlotSpec spec;
  spec.title = "a <b> & c";
  spec.x_max = 8, spec.y_max = 8;
  spec.series.push_back({"ideal", {{1, 1}, {8, 8}}, "#000", true, true, ""});
  spec.series.push_back({"points", {{2, 1.5}, {100, 1}}, "#f00", false, false, "circle"});
  const std::string svg = render_svg(spec);
  CHECK(svg.find("a &lt;b&gt; &amp; c") != std::string::npos);
  CHECK(svg.find("stroke-dasharray") != std::string::npos);
  CHECK(svg.rfind("</svg>") != std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  CHECK(circles == 2);  // the point inside the range and the legend's marker; (100, 1) is outside
  spec.y_min = 0;
  testing::check_error<ValueError>([&] { render_svg(spec); }, {"y range", "log"});
}

TEST_CASE("a link with a split size: its own alpha and beta above it, fitted from each side's samples") {
  Link link = test_link();
  link.split_bytes = 1 << 20;
  link.large_alpha_seconds = 100e-6;
  link.large_beta_bytes_per_second = 0.5e9;
  CHECK(ring_allreduce_seconds(1 << 20, 2, link) == Approx((1 << 20) / 1e9 + 2 * 10e-6));     // up to: small
  CHECK(ring_allreduce_seconds(2 << 20, 2, link) == Approx((2 << 20) / 0.5e9 + 2 * 100e-6));  // above: large
  std::vector<AllreduceSample> samples;
  for (double bytes : {4096.0, 262144.0, 1048576.0, 4194304.0, 16777216.0}) {
    samples.push_back({bytes, ring_allreduce_seconds(bytes, 2, link)});
  }
  const LinkFit fit = fit_link(samples, 2, 1 << 20);
  CHECK(fit.link.split_bytes == 1 << 20);
  CHECK(fit.link.alpha_seconds == Approx(10e-6).epsilon(1e-6));
  CHECK(fit.link.beta_bytes_per_second == Approx(1e9).epsilon(1e-6));
  CHECK(fit.link.large_alpha_seconds == Approx(100e-6).epsilon(1e-6));
  CHECK(fit.link.large_beta_bytes_per_second == Approx(0.5e9).epsilon(1e-6));
  // One sample above the split is too few for its own pair.
  testing::check_error<ValueError>(
      [&] {
        fit_link({samples[0], samples[1], samples[3]}, 2, 1 << 20);
      },
      {">= 2 allreduce sizes"});
}

TEST_CASE("the verdict at 8 workers: DP under 3x and DDP at >= 80% efficiency") {
  PredictedCurve curve;
  CHECK(verdict_at_8(curve) == "no prediction at 8 workers");
  PredictedPoint at_8;
  at_8.workers = 8;
  at_8.dp_speedup = 2.5;
  at_8.ddp_speedup = 7.0;
  curve.points.push_back(at_8);
  CHECK(verdict_at_8(curve).find("the claim holds") != std::string::npos);
  curve.points[0].dp_speedup = 3.5;
  CHECK(verdict_at_8(curve).find("not under 3x") != std::string::npos);
  CHECK(verdict_at_8(curve).find("does not hold") != std::string::npos);
  curve.points[0].dp_speedup = 2.5;
  curve.points[0].ddp_speedup = 6.0;  // 75%
  CHECK(verdict_at_8(curve).find("not near linear") != std::string::npos);
}

TEST_CASE("the step check: every rank's 16 bytes gathered by one ring allreduce of p x 16 bytes") {
  const Link link = test_link();
  CHECK(step_check_seconds(2, link) == Approx(ring_allreduce_seconds(32, 2, link)));
  CHECK(step_check_seconds(8, link) == Approx(2 * 7.0 / 8 * 128 / 1e9 + 14 * 10e-6));
}

TEST_CASE("predict_ddp with a communication hook: its launched collectives replace the buckets' allreduces") {
  const StepProfile p = test_profile();
  const Link link = test_link();
  const Machine machine{1, true};
  DdpSettings plain;
  plain.step_check = false;
  const StepPrediction allreduce = predict_ddp(p, 2, link, plain, machine);
  // Buckets ready at 2 ms (1.2 MiB) and 3 ms (0.6 MiB). A hook sending a quarter of each bucket, costed on the
  // link: bucket 0 0.3 MiB from 2 ms, bucket 1 0.15 MiB from 3 ms (the first is done by then).
  DdpSettings quarter = plain;
  quarter.hook_collectives = {{0, false, 0.3 * kMiB, -1}, {1, false, 0.15 * kMiB, -1}};
  const StepPrediction compressed = predict_ddp(p, 2, link, quarter, machine);
  const double c1 = 0.15 * kMiB / 1e9 + 20e-6;
  CHECK(compressed.exposed_comm_seconds == Approx(c1));  // bucket 1's allreduce after the last gradient
  CHECK(compressed.step_seconds < allreduce.step_seconds);
  // A measured (replayed) cost replaces the link's: bucket 1 taking 2 ms ends 2 ms after backward's compute.
  DdpSettings measured = quarter;
  measured.hook_collectives[1].seconds = 2e-3;
  CHECK(predict_ddp(p, 2, link, measured, machine).exposed_comm_seconds == Approx(2e-3));
  // Two collectives launched for bucket 1 (PowerSGD's uncompressed vectors and its P) run one after the other.
  DdpSettings two = measured;
  two.hook_collectives.push_back({1, false, 0, 0.5e-3});
  CHECK(predict_ddp(p, 2, link, two, machine).exposed_comm_seconds == Approx(2.5e-3));
  // A bucket index past the plan (the run's buckets differ from the plan) is charged to the last bucket.
  DdpSettings beyond = measured;
  beyond.hook_collectives.push_back({7, false, 0, 0.5e-3});
  CHECK(predict_ddp(p, 2, link, beyond, machine).exposed_comm_seconds == Approx(2.5e-3));
}

TEST_CASE("predict_ddp with a communication hook: finish() collectives and decoding are serial after the wait") {
  StepProfile p = test_profile();
  const Link link = test_link();
  DdpSettings settings;
  settings.step_check = false;
  settings.hook_collectives = {{0, false, 0, 0.1e-3}, {1, false, 0, 0.1e-3}, {0, true, 0, 0.3e-3},
                               {1, true, 0.2 * kMiB, -1}};
  const StepPrediction without = predict_ddp(p, 2, link, settings, Machine{1, true});
  // Launched: b0 2.0 -> 2.1 ms, b1 3.0 -> 3.1 ms: 0.1 ms after the last gradient. Then finish() of bucket 0
  // waits 0.3 ms for its collective and bucket 1 for an allreduce of 0.2 MiB on the link.
  const double finishing = 0.3e-3 + 0.2 * kMiB / 1e9 + 20e-6;
  CHECK(without.exposed_comm_seconds == Approx(0.1e-3 + finishing));
  CHECK(without.comm_seconds == Approx(0.2e-3 + finishing));
  // The hook's decoding (finish() with one worker) is compute: scaled like the rest, added to backward.
  p.hook_finish_seconds = 0.4e-3;
  const StepPrediction decoding = predict_ddp(p, 2, link, settings, Machine{1, true});
  CHECK(decoding.backward_seconds - without.backward_seconds == Approx(0.4e-3));
  CHECK(decoding.step_seconds - without.step_seconds == Approx(0.4e-3));
  StepProfile slow = p;
  slow.hook_finish_seconds = 0;
  const StepPrediction contended = predict_ddp(p, 2, link, settings, Machine{2, true});
  CHECK(contended.backward_seconds - predict_ddp(slow, 2, link, settings, Machine{2, true}).backward_seconds ==
        Approx(0.8e-3));
  // With one worker there is nothing to send, but the hook still encodes and decodes.
  CHECK(predict_ddp(p, 1, link, settings, Machine{1, true}).backward_seconds == Approx(3.5e-3 + 0.4e-3));
}

namespace {

// A measured DDP point at `workers` with the given per-rank thread loads and forward time.
MeasuredPoint ddp_point(int workers, double forward, std::vector<ThreadLoad> loads,
                        const std::string& hook = "allreduce", const std::string& group = "main") {
  MeasuredPoint point;
  point.group = group;
  point.setting = group == "hooks" ? hook : "";
  point.result.config.mode = "ddp";
  point.result.config.workers = workers;
  point.result.config.hook = hook;
  point.result.split.forward = forward;
  point.result.thread_load = std::move(loads);
  return point;
}

}  // namespace

TEST_CASE("DDP's compute slowdown: the slowest rank's compute thread (on a core or waiting) over the profile") {
  const StepProfile p = test_profile();  // DDP compute: 0.5 + 4 + 0.1 + 3.5 + 1 = 9.1 ms
  CHECK(p.ddp_compute_seconds() == Approx(9.1e-3));
  Measurements m;
  m.points.push_back(ddp_point(1, 4e-3, {{8e-3, 1.1e-3, 0, 0}}));
  m.points.push_back(ddp_point(2, 5e-3, {{10e-3, 8.2e-3, 2e-3, 3e-3}, {12e-3, 4e-3, 2e-3, 3e-3}}));
  const MeasuredPoint& two = m.points[1];
  CHECK(busiest_compute_thread(two.result) == Approx(18.2e-3));  // rank 0: 10 on a core + 8.2 waiting
  CHECK(compute_scale_of(two, p, m) == Approx(2.0));
  // The prediction's compute is then the slowest rank's measured one: 2 x 9.1 ms.
  DdpSettings settings;
  const StepPrediction predicted = predict_ddp(p, 2, test_link(), settings, Machine{2.0, true});
  CHECK(predicted.step_seconds - predicted.exposed_comm_seconds == Approx(18.2e-3));
  // Without the kernel's figures: the forward's slowdown over the main one-worker run's (5 / 4).
  MeasuredPoint unknown = two;
  unknown.result.thread_load.clear();
  CHECK(compute_scale_of(unknown, p, m) == Approx(1.25));
  // DataParallel's threads live in the bench's process: always the forward's slowdown.
  MeasuredPoint dp_one = ddp_point(1, 4e-3, {{8e-3, 0, 0, 0}}), dp_two = ddp_point(2, 6e-3, {{30e-3, 0, 0, 0}});
  dp_one.result.config.mode = dp_two.result.config.mode = "dp";
  m.points.push_back(dp_one);
  CHECK(compute_scale_of(dp_two, p, m) == Approx(1.5));
}

TEST_CASE("profile_for: a hook's point is predicted from the hook's one-worker backward and decoding") {
  const StepProfile base = test_profile();
  Measurements m;
  MeasuredPoint one = ddp_point(1, 4e-3, {}, "fp16", "hooks");
  one.result.split.backward = 4.2e-3;
  one.result.split.hook_finish = 0.3e-3;
  one.result.gradients = {{1.5e-3, 0, 0.6 * kMiB}, {4e-3, 0, 1.2 * kMiB}};
  m.points.push_back(one);
  RunConfig c;
  c.mode = "ddp";
  c.workers = 2;
  c.hook = "fp16";
  const StepProfile fp16 = profile_for(base, c, m);
  CHECK(fp16.ddp_backward_seconds == Approx(4.2e-3));
  CHECK(fp16.hook_finish_seconds == Approx(0.3e-3));
  CHECK(fp16.last_ready_seconds() == Approx(4e-3));
  CHECK(fp16.ddp_compute_seconds() == Approx(base.ddp_compute_seconds() + 0.7e-3 + 0.3e-3));
  // The default hook, or a hook without a one-worker run: the base profile.
  c.hook = "allreduce";
  CHECK(profile_for(base, c, m).ddp_backward_seconds == Approx(3.5e-3));
  c.hook = "bf16";
  CHECK(profile_for(base, c, m).hook_finish_seconds == 0);
}

TEST_CASE("the rank skew: each step waits for that step's slowest rank") {
  // Two ranks whose compute alternates: rank 0 takes 3, 1, 3, 1 ms, rank 1 1, 3, 1, 3 ms. Each rank's mean is
  // 2 ms, but every step waits for a 3 ms rank: 1 ms of skew per step.
  const auto rank = [](int r, std::vector<double> forward_ms) {
    nlohmann::json steps = nlohmann::json::array();
    for (double f : forward_ms) steps.push_back(to_json(StepRecord{.forward = f * 1e-3, .step = f * 1e-3}));
    return nlohmann::json{{"rank", r}, {"steps", steps}, {"peak_bytes", 1.0}, {"wall_seconds", 0.01},
                          {"payload_bytes_per_step", 0.0}, {"buckets", 1}, {"gradients", nlohmann::json::array()},
                          {"collectives", nlohmann::json::array()}};
  };
  RunConfig config;
  config.workers = 2;
  config.steps = 4;
  const RunResult merged = merge_rank_results(config, {rank(0, {3, 1, 3, 1}), rank(1, {1, 3, 1, 3})});
  CHECK(merged.rank_skew_seconds == Approx(1e-3));
  CHECK(merged.mean_step_seconds == Approx(0.01 / 4));
  // Ranks in step with each other wait for nobody; one rank always slower is the slowest rank's mean, not skew.
  CHECK(merge_rank_results(config, {rank(0, {3, 1, 3, 1}), rank(1, {3, 1, 3, 1})}).rank_skew_seconds == 0);
  CHECK(merge_rank_results(config, {rank(0, {3, 3, 3, 3}), rank(1, {1, 1, 1, 1})}).rank_skew_seconds == 0);
  // The prediction adds it once per step.
  const StepProfile p = test_profile();
  DdpSettings settings;
  const StepPrediction even = predict_ddp(p, 2, test_link(), settings, Machine{1, true, 0});
  const StepPrediction skewed = predict_ddp(p, 2, test_link(), settings, Machine{1, true, 1e-3});
  CHECK(skewed.rank_skew_seconds == Approx(1e-3));
  CHECK(skewed.step_seconds - even.step_seconds == Approx(1e-3));
  CHECK(predict_ddp(p, 1, test_link(), settings, Machine{1, true, 1e-3}).rank_skew_seconds == 0);
}
