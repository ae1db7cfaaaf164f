// The bench's record of one step's collectives: CountingProcessGroup copies what each collective sends and
// tags it with the communication-hook call that issued it (TimingCommHook), replay_collectives times the same
// messages again, their costs survive JSON; and ThreadLoad's arithmetic and reading.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>

#include "distributed/comm_hook.h"
#include "distributed/work.h"
#include "tensor/ops/factories.h"
#include "tests/check_error.h"
#include "bench/scaling/collective_record.h"
#include "bench/scaling/counting_process_group.h"
#include "bench/scaling/thread_load.h"
#include "bench/scaling/timing_comm_hook.h"

using namespace syncgrad;
using namespace syncgrad::bench;
using distributed::ReduceOp;
using doctest::Approx;

namespace {

// A world of one whose collectives are done at once; counts what it was asked to do.
class LocalGroup : public distributed::ProcessGroup {
 public:
  LocalGroup() : ProcessGroup(0, 1, {}) {}
  std::string backend_name() const override { return "local"; }
  std::shared_ptr<distributed::Work> allreduce(const Tensor&, ReduceOp) override { return done("allreduce"); }
  std::shared_ptr<distributed::Work> broadcast(const Tensor&, int) override { return done("broadcast"); }
  std::shared_ptr<distributed::Work> allgather(const std::vector<Tensor>& outputs, const Tensor&) override {
    CHECK(outputs.size() == 1);
    return done("allgather");
  }
  std::shared_ptr<distributed::Work> reduce_scatter(const Tensor&, const std::vector<Tensor>&, ReduceOp) override {
    return done("reduce_scatter");
  }
  std::shared_ptr<distributed::Work> barrier() override { return done("barrier"); }
  int calls = 0;

 private:
  std::shared_ptr<distributed::Work> done(const std::string& what) {
    ++calls;
    auto work = std::make_shared<distributed::Work>(what, std::chrono::milliseconds(1000));
    work->finish();
    return work;
  }
};

float first_float(const CollectiveRecord& r) {
  float value = 0;
  std::memcpy(&value, r.values.data(), sizeof value);
  return value;
}

Tensor filled(int64_t n, double value) {
  Tensor t = zeros({n});
  for (int64_t i = 0; i < n; ++i) t.data_ptr<float>()[i] = static_cast<float>(value);
  return t;
}

}  // namespace

TEST_CASE("CountingProcessGroup counts every collective and records them only while asked to") {
  auto local = std::make_shared<LocalGroup>();
  CountingProcessGroup group(local);
  Tensor t = filled(8, 1.0);
  group.allreduce(t, ReduceOp::kSum)->wait();
  CHECK(group.payload_bytes() == 32);
  CHECK(group.take_recorded().empty());
  group.set_recording(true);
  group.allreduce(t, ReduceOp::kMax)->wait();
  t.data_ptr<float>()[0] = 5;  // changed after the call: the record keeps what was sent
  group.broadcast(t, 0)->wait();
  group.allgather({zeros({8})}, t)->wait();
  group.set_recording(false);
  group.allreduce(t, ReduceOp::kSum)->wait();
  CHECK(group.payload_bytes() == 5 * 32);
  const std::vector<CollectiveRecord> records = group.take_recorded();
  CHECK(group.take_recorded().empty());  // taken: the next step starts a fresh record
  REQUIRE(records.size() == 3);
  CHECK(records[0].kind == CollectiveKind::kAllreduce);
  CHECK(records[0].op == ReduceOp::kMax);
  CHECK(first_float(records[0]) == 1);
  CHECK(records[1].kind == CollectiveKind::kBroadcast);
  CHECK(first_float(records[1]) == 5);
  CHECK(records[2].kind == CollectiveKind::kAllgather);
  for (const CollectiveRecord& r : records) {
    CHECK(r.bytes == 32);
    CHECK(r.numel == 8);
    CHECK(r.values.size() == 32);
    CHECK(r.dtype == DType::f32);
    CHECK(r.origin.call == CollectiveOrigin::Call::kOther);
  }
}

TEST_CASE("TimingCommHook times launch() and finish() and tags their collectives with the call and bucket") {
  auto group = std::make_shared<CountingProcessGroup>(std::make_shared<LocalGroup>());
  TimingCommHook hook(distributed::fp16_compress_hook(), group);
  CHECK(hook.name() == "fp16");
  distributed::GradBucket bucket;
  bucket.index = 3;
  bucket.buffer = filled(1000, 0.25);
  group->set_recording(true);
  group->allreduce(filled(2, 1), ReduceOp::kSum);  // outside the hook: not a hook's collective
  hook.launch(*group, bucket)->wait();
  hook.finish(*group, bucket);
  const std::vector<CollectiveRecord> records = group->take_recorded();
  REQUIRE(records.size() == 2);
  CHECK(records[0].origin.call == CollectiveOrigin::Call::kOther);
  CHECK(records[1].origin.call == CollectiveOrigin::Call::kLaunch);
  CHECK(records[1].origin.bucket == 3);
  CHECK(records[1].dtype == DType::f16);  // the compressed copy, half the bytes
  CHECK(records[1].bytes == 2000);
  CHECK(hook.launch_seconds() > 0);
  CHECK(hook.finish_seconds() > 0);
  CHECK(bucket.buffer.data_ptr<float>()[999] == 0.25f);  // finish() decoded the (unchanged) sum back
  hook.reset();
  CHECK(hook.launch_seconds() == 0);
  CHECK(hook.finish_seconds() == 0);
}

TEST_CASE("replay_collectives reissues each recorded message on the group and keeps its origin") {
  auto local = std::make_shared<LocalGroup>();
  CountingProcessGroup group(local);
  group.set_recording(true);
  group.set_origin({CollectiveOrigin::Call::kFinish, 1});
  group.allreduce(filled(4, 2.0), ReduceOp::kSum);
  group.set_origin({});
  group.allgather({zeros({4})}, filled(4, 1.0));
  const std::vector<CollectiveRecord> records = group.take_recorded();
  const int before = local->calls;
  const std::vector<CollectiveCost> costs = replay_collectives(*local, records, 5);
  CHECK(local->calls - before == 2 * 5 * 2);  // a barrier and the collective per repeat
  REQUIRE(costs.size() == 2);
  CHECK(costs[0].origin.call == CollectiveOrigin::Call::kFinish);
  CHECK(costs[0].origin.bucket == 1);
  CHECK(costs[0].bytes == 16);
  CHECK(costs[0].replay_seconds > 0);
  CHECK(costs[1].kind == CollectiveKind::kAllgather);
  CHECK(costs_of(records)[0].replay_seconds == 0);  // not replayed: no cost yet
  const CollectiveCost back = collective_cost_from_json(to_json(costs[0]));
  CHECK(back.kind == CollectiveKind::kAllreduce);
  CHECK(back.origin.call == CollectiveOrigin::Call::kFinish);
  CHECK(back.origin.bucket == 1);
  CHECK(back.dtype == DType::f32);
  CHECK(back.replay_seconds == costs[0].replay_seconds);
  nlohmann::json bad = to_json(costs[0]);
  bad["dtype"] = "float7";
  testing::check_error<ValueError>([&] { collective_cost_from_json(bad); }, {"float7"});
}

TEST_CASE("average_over_steps: replayed times averaged position by position over the recorded steps") {
  CollectiveCost check, bucket;
  check.bytes = 32;
  bucket.origin = {CollectiveOrigin::Call::kLaunch, 0};
  bucket.bytes = 1000;
  std::vector<std::vector<CollectiveCost>> steps(3, {check, bucket});
  const double bucket_times[] = {1e-3, 2e-3, 6e-3};  // the gradients, and so the reduction's speed, change
  for (int s = 0; s < 3; ++s) {
    steps[s][0].replay_seconds = 0.1e-3;
    steps[s][1].replay_seconds = bucket_times[s];
    steps[s][1].replay_cpu_seconds = bucket_times[s] / 2;
  }
  steps.push_back({check});  // a step that issued a different sequence is left out
  steps.push_back({check, bucket});
  steps.back()[1].replay_seconds = 3e-3;
  const std::vector<CollectiveCost> average = average_over_steps(steps);
  REQUIRE(average.size() == 2);
  CHECK(average[0].replay_seconds == Approx(0.1e-3 * 3 / 4));
  CHECK(average[1].replay_seconds == Approx(3e-3));
  CHECK(average[1].replay_cpu_seconds == Approx(4.5e-3 / 4));
  CHECK(average[1].origin.call == CollectiveOrigin::Call::kLaunch);
  CHECK(average_over_steps({}).empty());
}

TEST_CASE("ThreadLoad: differences per step, JSON, and this process's figures growing with its work") {
  const ThreadLoad later{6, 4, 2, 8}, earlier{2, 2, 1, 2};
  const ThreadLoad per_step = (later - earlier) / 2;
  CHECK(per_step.main_cpu == 2);
  CHECK(per_step.main_wait == 1);
  CHECK(per_step.other_cpu == 0.5);
  CHECK(per_step.other_wait == 3);
  const ThreadLoad back = thread_load_from_json(to_json(per_step));
  CHECK(back.other_wait == 3);
  const auto first = read_thread_load();
  if (!first) {
    MESSAGE("this kernel does not report /proc/self/task/*/schedstat: the reading is not checked");
    return;
  }
  std::atomic<double> sink{0};
  for (int i = 0; i < 3'000'000; ++i) sink = sink + 1e-9 * i;
  const auto second = read_thread_load();
  REQUIRE(second);
  CHECK(second->main_cpu >= first->main_cpu);
  CHECK(second->main_wait >= first->main_wait);
  CHECK(second->main_cpu + second->main_wait > first->main_cpu + first->main_wait);
}
