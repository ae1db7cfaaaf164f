// Replaying recorded collectives, and their JSON form.
#include "bench/scaling/collective_record.h"

#include <chrono>
#include <cstring>
#include <optional>

#include "tensor/errors.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "bench/scaling/step_record.h"
#include "bench/scaling/thread_load.h"

namespace syncgrad::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<distributed::Work> issue(distributed::ProcessGroup& group, const CollectiveRecord& record,
                                         const Tensor& input, std::vector<Tensor>& outputs) {
  switch (record.kind) {
    case CollectiveKind::kAllreduce: return group.allreduce(input, record.op);
    case CollectiveKind::kBroadcast: return group.broadcast(input, record.root);
    case CollectiveKind::kAllgather: return group.allgather(outputs, input);
  }
  throw ValueError("replay_collectives: unknown collective kind");
}

const char* kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce: return "allreduce";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllgather: return "allgather";
  }
  return "?";
}

CollectiveKind kind_named(const std::string& name) {
  if (name == "broadcast") return CollectiveKind::kBroadcast;
  if (name == "allgather") return CollectiveKind::kAllgather;
  return CollectiveKind::kAllreduce;
}

const char* call_name(CollectiveOrigin::Call call) {
  switch (call) {
    case CollectiveOrigin::Call::kLaunch: return "launch";
    case CollectiveOrigin::Call::kFinish: return "finish";
    case CollectiveOrigin::Call::kOther: return "other";
  }
  return "?";
}

CollectiveOrigin::Call call_named(const std::string& name) {
  if (name == "launch") return CollectiveOrigin::Call::kLaunch;
  if (name == "finish") return CollectiveOrigin::Call::kFinish;
  return CollectiveOrigin::Call::kOther;
}

DType dtype_named(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  throw ValueError("collective record: unknown dtype \"" + name + "\"");
}

CollectiveCost cost_of(const CollectiveRecord& r) { return {r.kind, r.origin, r.dtype, r.bytes, 0}; }

}  // namespace

std::vector<CollectiveCost> costs_of(const std::vector<CollectiveRecord>& records) {
  std::vector<CollectiveCost> costs;
  for (const CollectiveRecord& r : records) costs.push_back(cost_of(r));
  return costs;
}

std::vector<CollectiveCost> replay_collectives(distributed::ProcessGroup& group,
                                               const std::vector<CollectiveRecord>& records, int repeats) {
  std::vector<CollectiveCost> costs;
  for (const CollectiveRecord& record : records) {
    std::vector<double> times;
    double cpu = 0;
    bool cpu_known = true;
    for (int rep = 0; rep < repeats; ++rep) {
      const Tensor input = empty({record.numel}, TensorOptions{record.dtype});
      std::memcpy(input.data_ptr(), record.values.data(), record.values.size());
      std::vector<Tensor> outputs;
      if (record.kind == CollectiveKind::kAllgather) {
        for (int r = 0; r < group.size(); ++r) outputs.push_back(empty_like(input));
      }
      group.barrier()->wait();
      const std::optional<ThreadLoad> before = read_thread_load();
      const auto start = Clock::now();
      issue(group, record, input, outputs)->wait();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const std::optional<ThreadLoad> after = read_thread_load();
      if (rep < 2) continue;
      times.push_back(seconds);
      cpu_known = cpu_known && before && after;
      if (cpu_known) cpu += (after->main_cpu + after->other_cpu) - (before->main_cpu + before->other_cpu);
    }
    CollectiveCost cost = cost_of(record);
    cost.replay_seconds = median(times);
    cost.replay_cpu_seconds = cpu_known && !times.empty() ? cpu / static_cast<double>(times.size()) : 0;
    costs.push_back(cost);
  }
  return costs;
}

std::vector<CollectiveCost> average_over_steps(const std::vector<std::vector<CollectiveCost>>& steps) {
  if (steps.empty()) return {};
  std::vector<CollectiveCost> average = steps.back();
  for (size_t i = 0; i < average.size(); ++i) {
    double seconds = 0, cpu = 0;
    int count = 0;
    for (const std::vector<CollectiveCost>& step : steps) {
      if (step.size() != average.size()) continue;  // a step that issued other collectives: not comparable
      seconds += step[i].replay_seconds;
      cpu += step[i].replay_cpu_seconds;
      ++count;
    }
    average[i].replay_seconds = seconds / count;
    average[i].replay_cpu_seconds = cpu / count;
  }
  return average;
}

nlohmann::json to_json(const CollectiveCost& c) {
  return {{"kind", kind_name(c.kind)},
          {"call", call_name(c.origin.call)},
          {"bucket", c.origin.bucket},
          {"dtype", dtype_name(c.dtype)},
          {"bytes", c.bytes},
          {"replay_seconds", c.replay_seconds},
          {"replay_cpu_seconds", c.replay_cpu_seconds}};
}

CollectiveCost collective_cost_from_json(const nlohmann::json& j) {
  CollectiveCost c;
  c.kind = kind_named(j.at("kind").get<std::string>());
  c.origin = {call_named(j.at("call").get<std::string>()), j.at("bucket").get<int>()};
  c.dtype = dtype_named(j.at("dtype").get<std::string>());
  c.bytes = j.at("bytes").get<double>();
  c.replay_seconds = j.at("replay_seconds").get<double>();
  c.replay_cpu_seconds = j.value("replay_cpu_seconds", 0.0);
  return c;
}

}  // namespace syncgrad::bench
