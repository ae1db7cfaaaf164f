// A DDP rank of the scaling bench: training steps timed by phase (the exposed communication from DDPStats),
// the allocator's peak, the bytes handed to collectives, gradient-ready times and the allreduce sweep.
#include "tools/bench/ddp_rank.h"

#include <chrono>
#include <fstream>

#include "distributed/ddp.h"
#include "models/models.h"
#include "optim/sgd.h"
#include "tensor/allocator.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"
#include "tools/bench/batch_source.h"
#include "tools/bench/counting_process_group.h"
#include "tools/bench/gradient_clock.h"
#include "tools/bench/phase_timer.h"

namespace syncgrad::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Median time of an f32 sum-allreduce for sizes 4 KiB .. 16 MiB (four up to 1 MiB, four above: the Gloo group
// changes algorithm there).
nlohmann::json allreduce_sweep(distributed::ProcessGroup& group) {
  nlohmann::json samples = nlohmann::json::array();
  for (int64_t kib : {4, 32, 256, 1024, 2048, 4096, 8192, 16384}) {
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
  options.comm_hook = distributed::make_comm_hook(config.hook);
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
  for (int i = 0; i < config.warmup + config.steps; ++i) {
    if (i == config.warmup) {
      group->barrier()->wait();
      cpu_allocator().reset_peak();
      payload_at_start = group->payload_bytes();
      start = Clock::now();
    }
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
    r.backward = backward_wall - stats.exposed_seconds;
    opt.step();
    opt.zero_grad(false);
    r.optimizer = t.lap();
    r.step = since(step_start);
    if (i >= config.warmup) {
      steps.push_back(to_json(r));
      clock.record();
    }
  }
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
  if (config.allreduce_sweep && group->size() > 1) result["allreduce"] = allreduce_sweep(*group);
  distributed::destroy_process_group();
  const std::string path = rank_result_path(out_dir, rank);
  std::ofstream out(path);
  out << result.dump();
  if (!out.flush()) throw IOError("syncgrad-bench rank " + std::to_string(rank) + ": cannot write " + path);
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
  result.samples_per_second = static_cast<double>(config.steps * config.workers * config.batch) / result.wall_seconds;
  result.payload_bytes_per_step = first.at("payload_bytes_per_step").get<double>();
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
