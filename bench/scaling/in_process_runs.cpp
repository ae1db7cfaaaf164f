// Measuring the single-worker baseline and DataParallel in this process, one compute thread per worker.
#include "bench/scaling/in_process_runs.h"

#include <functional>
#include <optional>

#include "autograd/grad_mode.h"
#include "distributed/data_parallel.h"
#include "models/models.h"
#include "nn/linear.h"
#include "optim/sgd.h"
#include "tensor/check.h"
#include "tensor/memory_tag.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "bench/scaling/batch_source.h"
#include "bench/scaling/phase_timer.h"
#include "bench/scaling/thread_load.h"

namespace syncgrad::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDeviceZeroTag = 1;  // the caller's thread: DataParallel's first device

struct Measured {
  std::vector<StepRecord> steps;
  double wall_seconds = 0;
  std::optional<ThreadLoad> load;  // per step
};

// Runs config.warmup + config.steps steps of `step` and keeps the measured ones.
Measured measure_steps(const RunConfig& config, const std::function<void(StepRecord&)>& step) {
  Measured measured;
  std::vector<StepRecord>& records = measured.steps;
  Clock::time_point start;
  std::optional<ThreadLoad> load_at_start;
  for (int i = 0; i < config.warmup + config.steps; ++i) {
    if (i == config.warmup) {
      reset_memory_tag_peaks();
      load_at_start = read_thread_load();
      start = Clock::now();
    }
    StepRecord record;
    const auto step_start = Clock::now();
    step(record);
    record.step = std::chrono::duration<double>(Clock::now() - step_start).count();
    if (i >= config.warmup) records.push_back(record);
  }
  measured.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::optional<ThreadLoad> load_at_end = read_thread_load();
  if (load_at_start && load_at_end) measured.load = (*load_at_end - *load_at_start) / config.steps;
  return measured;
}

RunResult summarise(const RunConfig& config, Measured measured) {
  RunResult result;
  result.config = config;
  result.steps = std::move(measured.steps);
  const double wall_seconds = measured.wall_seconds;
  if (measured.load) result.thread_load = {*measured.load};
  result.split = median_split(result.steps);
  result.wall_seconds = wall_seconds;
  result.mean_step_seconds = wall_seconds / config.steps;
  result.samples_per_second = static_cast<double>(config.steps * config.workers * config.batch) / wall_seconds;
  std::vector<double> times;
  for (const StepRecord& s : result.steps) times.push_back(s.step);
  result.noise = relative_spread(times);
  for (int w = 0; w < config.workers; ++w) {
    result.peak_bytes.push_back(static_cast<double>(memory_tag_stats(w + 1).peak_allocated_bytes));
  }
  return result;
}

RunResult run_single(const RunConfig& config, const SyntheticTask& task) {
  Generator init(config.seed);
  auto model = models::make_model(config.model, &init);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  BatchSource data(task, config.batch, config.loader, config.loader_workers, config.seed + 1);
  const Measured measured = measure_steps(
      config,
      [&](StepRecord& r) {
        PhaseTimer t;
        const data::Batch batch = data.next();
        r.data_wait = t.lap();
        const Tensor output = (*model)(batch.data);
        r.forward = t.lap();
        const Tensor loss = task.loss(output, batch.target);
        r.loss = t.lap();
        r.forward += r.loss;
        loss.backward();
        r.backward = t.lap();
        opt.step();
        opt.zero_grad(false);
        r.optimizer = t.lap();
      });
  return summarise(config, measured);
}

RunResult run_data_parallel(const RunConfig& config, const SyntheticTask& task) {
  Generator init(config.seed);
  auto model = models::make_model(config.model, &init);
  const std::string name = config.model;
  distributed::DataParallelOptions options;
  options.num_workers = config.workers;
  options.memory_tags = true;
  distributed::DataParallel dp(model, [name] { return models::make_model(name); }, options);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  BatchSource data(task, config.batch * config.workers, config.loader, config.loader_workers, config.seed + 1);
  const Measured measured = measure_steps(
      config,
      [&](StepRecord& r) {
        PhaseTimer t;
        const data::Batch batch = data.next();
        r.data_wait = t.lap();
        const Tensor output = dp(batch.data);
        const double forward_wall = t.lap();
        const distributed::DataParallelStats forward_stats = dp.last_stats();
        const Tensor loss = task.loss(output, batch.target);
        r.loss = t.lap();
        loss.backward();
        const double backward_wall = t.lap();
        const distributed::DataParallelStats& stats = dp.last_stats();
        r.replicate = stats.replicate_seconds;
        r.scatter = stats.scatter_seconds;  // the input's chunks and the output gradient's pieces
        r.gather = stats.gather_seconds;
        r.reduce = stats.reduce_seconds;
        r.forward = forward_wall - forward_stats.communication_seconds() + r.loss;
        r.backward = backward_wall - (stats.scatter_seconds - forward_stats.scatter_seconds) - stats.reduce_seconds;
        r.exposed_comm = r.comm = stats.communication_seconds();
        opt.step();
        opt.zero_grad(false);
        r.optimizer = t.lap();
      });
  return summarise(config, measured);
}

double median_seconds(int repeats, const std::function<void()>& body) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    body();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return median(times);
}

}  // namespace

RunResult run_in_process(const RunConfig& config) {
  SYNCGRAD_CHECK(config.mode == "single" || config.mode == "dp", ValueError,
                 "run_in_process: mode must be single or dp, got ", config.mode);
  SYNCGRAD_CHECK(config.mode != "single" || config.workers == 1, ValueError,
                 "run_in_process: the single-worker baseline takes workers = 1, got ", config.workers);
  SyntheticTask task(config.model);
  MemoryTagGuard device_zero(kDeviceZeroTag);
  return config.mode == "single" ? run_single(config, task) : run_data_parallel(config, task);
}

void measure_dp_serial_costs(const RunConfig& config, StepProfile& profile, int repeats) {
  SyntheticTask task(config.model);
  Generator init(config.seed);
  auto model = models::make_model(config.model, &init);
  auto replica = models::make_model(config.model, &init);
  BatchSource data(task, config.batch, false, 0, config.seed + 1);
  const data::Batch batch = data.next();
  const Tensor output = (*model)(batch.data);  // (B, classes)
  task.loss(output, batch.target).backward();
  NoGradGuard no_grad;
  const auto params = model->parameters(), copies = replica->parameters();
  profile.replica_copy_seconds = median_seconds(repeats, [&] {
    for (size_t i = 0; i < params.size(); ++i) raw::copy_(copies[i], params[i]);
  });
  std::vector<Tensor> sums(params.size());
  profile.gradient_clone_seconds = median_seconds(repeats, [&] {
    for (size_t i = 0; i < params.size(); ++i) sums[i] = raw::clone(params[i].grad());
  });
  profile.gradient_add_seconds = median_seconds(repeats, [&] {
    for (size_t i = 0; i < params.size(); ++i) sums[i] = raw::add(sums[i], params[i].grad());
  });
  const Tensor detached = output.detach();
  profile.output_copy_seconds = median_seconds(repeats, [&] { raw::clone(detached); });
  // One hand-off to a worker thread and back: DataParallel with 2 workers on a 1x1 linear layer.
  auto tiny = [] { return std::make_shared<nn::Linear>(1, 1); };
  distributed::DataParallelOptions two_workers;
  two_workers.num_workers = 2;
  distributed::DataParallel dp(tiny(), tiny, two_workers);
  const Tensor two = zeros({2, 1});
  std::vector<double> regions;
  for (int i = 0; i < repeats; ++i) {
    dp(two);
    regions.push_back(dp.last_stats().parallel_forward_seconds);
  }
  profile.wake_seconds = median(regions);
}

}  // namespace syncgrad::bench
