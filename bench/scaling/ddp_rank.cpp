// A DDP rank of the scaling bench: training steps timed by phase (the exposed communication from DDPStats, the
// communication hook's calls from TimingCommHook), the allocator's peak, the bytes handed to collectives, the
// threads' time on and waiting for a core, gradient-ready times, the allreduce sweep and the replay of the
// collectives of a few steps.
#include "bench/scaling/ddp_rank.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>

#include "distributed/ddp.h"
#include "models/models.h"
#include "optim/sgd.h"
#include "tensor/allocator.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"
#include "bench/scaling/batch_source.h"
#include "bench/scaling/counting_process_group.h"
#include "bench/scaling/gradient_clock.h"
#include "bench/scaling/phase_timer.h"
#include "bench/scaling/timing_comm_hook.h"

namespace syncgrad::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Median time of an f32 sum-allreduce for sizes 4 KiB .. 32 MiB (seven up to 8 MiB, two above: the Gloo group
// changes algorithm there, distributed/gloo_small_allreduce.h).
nlohmann::json allreduce_sweep(distributed::ProcessGroup& group) {
  nlohmann::json samples = nlohmann::json::array();
  for (int64_t kib : {4, 32, 256, 1024, 2048, 4096, 8192, 16384, 32768}) {
    const int64_t bytes = kib << 10;
    Tensor buffer = ones({bytes / 4});
    group.barrier()->wait();
    std::vector<double> times;
    for (int rep = 0; rep < 9; ++rep) {
      const auto start = Clock::now();
      group.allreduce(buffer)->wait();
      if (rep >= 2) times.push_back(since(start));
    }
    samples.push_back({{"bytes", static_cast<double>(bytes)}, {"seconds", median(times)}});
  }
  return samples;
}

// RunResult::rank_skew_seconds of the ranks' steps (step i of every rank is the same synchronised step).
double rank_skew(const std::vector<nlohmann::json>& ranks) {
  if (ranks.size() < 2) return 0;
  std::vector<double> slowest;      // per step, over ranks
  double slowest_mean = 0;          // over ranks, of the mean over steps
  for (const nlohmann::json& rank : ranks) {
    const nlohmann::json& steps = rank.at("steps");
    if (steps.empty()) return 0;
    slowest.resize(std::max(slowest.size(), steps.size()), 0);
    double sum = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      const StepRecord r = step_record_from_json(steps[i]);
      const double compute = r.data_wait + r.forward + r.backward + r.optimizer;
      slowest[i] = std::max(slowest[i], compute);
      sum += compute;
    }
    slowest_mean = std::max(slowest_mean, sum / static_cast<double>(steps.size()));
  }
  double mean_slowest = 0;
  for (double c : slowest) mean_slowest += c / static_cast<double>(slowest.size());
  return std::max(0.0, mean_slowest - slowest_mean);
}

// Measured step `step` (0-based) of `steps` is one of the kRecordedSteps whose collectives are recorded: the
// middles of equal stretches of the measured steps.
constexpr int kRecordedSteps = 5;
bool is_recorded_step(int step, int steps) {
  if (step < 0) return false;
  const int stretches = std::min(kRecordedSteps, steps);
  for (int k = 0; k < stretches; ++k) {
    if (step == (2 * k + 1) * steps / (2 * stretches)) return true;
  }
  return false;
}

}  // namespace

std::string rank_result_path(const std::string& out_dir, int rank) {
  return out_dir + "/rank" + std::to_string(rank) + ".json";
}

void run_ddp_rank(const RunConfig& config, const std::string& out_dir) {
  set_num_threads(1);
  distributed::InitOptions init;
  init.group.timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_seconds * 1000));
  init.store_timeout = init.group.timeout;
  auto group = std::make_shared<CountingProcessGroup>(distributed::init_process_group(init));
  const int rank = group->rank();
  SyntheticTask task(config.model);
  Generator init_gen(config.seed);
  auto model = models::make_model(config.model, &init_gen);
  distributed::DDPOptions options;
  options.bucket_cap_mb = config.bucket_cap_mb;
  options.first_bucket_mb = config.first_bucket_mb;
  options.overlap = config.overlap;
  auto hook = std::make_shared<TimingCommHook>(distributed::make_comm_hook(config.hook), group);
  options.comm_hook = hook;
  // The buffers are broadcast below, timed as communication, instead of inside forward.
  options.broadcast_buffers = false;
  const bool has_buffers = !model->named_buffers().empty();
  distributed::DistributedDataParallel ddp(model, group, options);
  GradientClock clock(model->named_parameters());
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  BatchSource data(task, config.batch, config.loader, config.loader_workers, config.seed + 1 + rank);

  nlohmann::json steps = nlohmann::json::array();
  Clock::time_point start;
  double payload_at_start = 0;
  std::optional<ThreadLoad> load_at_start;
  std::vector<std::vector<CollectiveRecord>> recorded;  // per recorded step
  for (int i = 0; i < config.warmup + config.steps; ++i) {
    if (i == config.warmup) {
      group->barrier()->wait();
      cpu_allocator().reset_peak();
      payload_at_start = group->payload_bytes();
      load_at_start = read_thread_load();
      start = Clock::now();
    }
    // The collectives of a few steps spread over the measured ones are recorded, to be replayed after training.
    const bool record = is_recorded_step(i - config.warmup, config.steps);
    group->set_recording(record);
    hook->reset();
    StepRecord r;
    const auto step_start = Clock::now();
    PhaseTimer t;
    const data::Batch batch = data.next();
    r.data_wait = t.lap();
    if (has_buffers) {
      ddp.broadcast_buffers();
      r.exposed_comm = r.comm = t.lap();
    }
    const Tensor output = ddp(batch.data);
    r.forward = t.lap();
    const Tensor loss = task.loss(output, batch.target);
    r.loss = t.lap();
    r.forward += r.loss;
    clock.start();
    loss.backward();
    const double backward_wall = t.lap();
    const distributed::DDPStats& stats = ddp.last_stats();
    r.exposed_comm += stats.exposed_seconds;
    r.comm += stats.comm_seconds;
    r.hook_launch = hook->launch_seconds();
    r.hook_finish = hook->finish_seconds();
    r.backward = backward_wall - stats.exposed_seconds - r.hook_finish;
    opt.step();
    opt.zero_grad(false);
    r.optimizer = t.lap();
    r.step = since(step_start);
    if (i >= config.warmup) {
      steps.push_back(to_json(r));
      clock.record();
    }
    if (record) recorded.push_back(group->take_recorded());
  }
  group->set_recording(false);
  const std::optional<ThreadLoad> load_at_end = read_thread_load();
  group->barrier()->wait();
  const double wall = since(start);
  nlohmann::json result = {
      {"rank", rank},
      {"world", group->size()},
      {"steps", steps},
      {"wall_seconds", wall},
      {"peak_bytes", static_cast<double>(cpu_allocator().stats().peak_allocated_bytes)},
      {"payload_bytes_per_step", (group->payload_bytes() - payload_at_start) / config.steps},
      {"buckets", ddp.bucket_names().size()},
  };
  nlohmann::json gradients = nlohmann::json::array();
  for (const GradientReady& g : clock.profile()) {
    gradients.push_back({{"ready_seconds", g.ready_seconds}, {"numel", g.numel}, {"bytes", g.bytes}});
  }
  result["gradients"] = gradients;
  if (load_at_start && load_at_end) result["thread_load"] = to_json((*load_at_end - *load_at_start) / config.steps);
  if (config.allreduce_sweep && group->size() > 1) result["allreduce"] = allreduce_sweep(group->inner());
  std::vector<std::vector<CollectiveCost>> per_step;
  for (const std::vector<CollectiveRecord>& records : recorded) {
    per_step.push_back(group->size() > 1 ? replay_collectives(group->inner(), records, 5) : costs_of(records));
  }
  const std::vector<CollectiveCost> collectives = average_over_steps(per_step);
  nlohmann::json replayed = nlohmann::json::array();
  for (const CollectiveCost& c : collectives) replayed.push_back(to_json(c));
  result["collectives"] = replayed;
  distributed::destroy_process_group();
  const std::string path = rank_result_path(out_dir, rank);
  std::ofstream out(path);
  out << result.dump();
  SYNCGRAD_CHECK(out.flush(), IOError, "syncgrad-bench rank ", rank, ": cannot write ", path);
}

RunResult merge_rank_results(const RunConfig& config, const std::vector<nlohmann::json>& ranks) {
  RunResult result;
  result.config = config;
  std::vector<double> times;
  for (const nlohmann::json& rank : ranks) {
    for (const nlohmann::json& step : rank.at("steps")) {
      result.steps.push_back(step_record_from_json(step));
      times.push_back(result.steps.back().step);
    }
    result.peak_bytes.push_back(rank.at("peak_bytes").get<double>());
  }
  const nlohmann::json& first = ranks.at(0);
  result.split = median_split(result.steps);
  result.noise = relative_spread(times);
  result.wall_seconds = first.at("wall_seconds").get<double>();
  result.mean_step_seconds = result.wall_seconds / config.steps;
  result.samples_per_second = static_cast<double>(config.steps * config.workers * config.batch) / result.wall_seconds;
  result.payload_bytes_per_step = first.at("payload_bytes_per_step").get<double>();
  for (const nlohmann::json& rank : ranks) {
    if (rank.contains("thread_load")) result.thread_load.push_back(thread_load_from_json(rank.at("thread_load")));
  }
  if (result.thread_load.size() != ranks.size()) result.thread_load.clear();
  for (const nlohmann::json& c : first.at("collectives")) result.collectives.push_back(collective_cost_from_json(c));
  result.rank_skew_seconds = rank_skew(ranks);
  result.buckets = first.at("buckets").get<int>();
  for (const nlohmann::json& g : first.at("gradients")) {
    result.gradients.push_back(
        {g.at("ready_seconds").get<double>(), g.at("numel").get<int64_t>(), g.at("bytes").get<double>()});
  }
  if (first.contains("allreduce")) {
    for (const nlohmann::json& s : first.at("allreduce")) {
      result.allreduce.push_back({s.at("bytes").get<double>(), s.at("seconds").get<double>()});
    }
  }
  return result;
}

}  // namespace syncgrad::bench
