// The training loop.
#include "tools/train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>

#include "data/loader.h"
#include "distributed/data_parallel.h"
#include "distributed/ddp.h"
#include "distributed/launch_env.h"
#include "distributed/sync_batch_norm.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "syncgrad.h"
#include "tools/train/checkpoint.h"
#include "tools/train/loss_watch.h"
#include "tools/train/metrics_log.h"
#include "tools/train/training_device.h"

namespace syncgrad::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

std::string format_duration(double seconds) {
  long s = std::lround(seconds);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  return buffer;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<Tensor> params) {
  if (c.optimizer == "sgd") {
    return std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = c.lr, .momentum = c.momentum,
                                                                  .weight_decay = c.weight_decay});
  }
  if (c.optimizer == "adam") {
    return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  }
  if (c.optimizer == "adamw") {
    return std::make_unique<optim::AdamW>(params, optim::AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  }
  throw ValueError("--optimizer: unknown optimizer \"" + c.optimizer + "\"; choose sgd, adam or adamw");
}

// Joins the job's process group for the length of a multi-process run.
class GroupMembership {
 public:
  GroupMembership(const TrainConfig& c, const std::string& backend, Device device) {
    const bool launched = distributed::read_launch_env(false).world_size > 1;
    if (c.parallel == "dp" && launched) {
      throw ValueError("--parallel dp runs in one process, but WORLD_SIZE > 1 says this is one of several; run it "
                       "without syncgrad-launch, or use --parallel ddp");
    }
    if (c.parallel == "none" && launched) {
      throw ValueError("--parallel none with WORLD_SIZE > 1 would train independent copies; use --parallel ddp "
                       "(or auto)");
    }
    if (c.parallel != "ddp" && !(c.parallel == "auto" && launched)) return;
    distributed::InitOptions options;
    options.backend = backend;
    if (device.is_cuda()) options.group.device_index = device.index;
    group_ = distributed::init_process_group(options);
  }
  ~GroupMembership() {
    if (group_) distributed::destroy_process_group();
  }
  GroupMembership(const GroupMembership&) = delete;
  GroupMembership& operator=(const GroupMembership&) = delete;
  const std::shared_ptr<distributed::ProcessGroup>& group() const { return group_; }
  int rank() const { return group_ ? group_->rank() : 0; }
  int world_size() const { return group_ ? group_->size() : 1; }
  // Everyone waits here while rank 0 saves or evaluates.
  void barrier() const {
    if (group_) group_->barrier()->wait();
  }

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
};

// The learning rate of optimizer step `step` (0-based) of `total_steps`: the peak is lr, or with --scale-lr
// linear lr x world size reached linearly from lr over the warm-up steps (Goyal et al.'s gradual warm-up); with
// --lr-schedule cosine the peak is then annealed to zero at the last step of --epochs (half a cosine wave;
// --max-steps stops a run early without changing its schedule, so a resumed run continues the same curve).
double lr_at(const TrainConfig& c, int world_size, int64_t step, int64_t total_steps) {
  double peak = c.lr;
  int64_t warmup = 0;
  if (c.scale_lr == "linear") {
    peak = c.lr * world_size;
    warmup = std::max<int64_t>(0, c.warmup_steps);
    if (step < warmup) return c.lr + (peak - c.lr) * static_cast<double>(step) / static_cast<double>(warmup);
  }
  if (c.lr_schedule != "cosine" || total_steps <= warmup) return peak;
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(total_steps - warmup);
  return peak * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
}

}  // namespace

TrainSummary run_training(const TrainConfig& c, std::ostream& console) {
  set_num_threads(c.threads);
  distributed::make_comm_hook(c.comm_hook);  // an unknown name fails before any data is read
  const Device device = resolve_training_device(c);
  const std::string backend = resolve_backend(c, device);
  GroupMembership job(c, backend, device);
  const int rank = job.rank(), world = job.world_size();
  std::ostream silent(nullptr);
  std::ostream& out = rank == 0 ? console : silent;
  if (!c.checkpoint_dir.empty() && rank == 0) ensure_writable_directory(c.checkpoint_dir);
  std::shared_ptr<const Task> task = make_task(c);

  Generator init_gen(c.seed);
  std::shared_ptr<nn::Module> model = task->make_model(&init_gen);
  if (!c.init_from.empty()) load_weights(c.init_from, *model);
  model->to(device);
  std::unique_ptr<optim::Optimizer> optimizer = make_optimizer(c, model->parameters());
  manual_seed(c.seed);

  TrainingPosition position;
  if (!c.resume.empty()) {
    position = load_checkpoint(c.resume, c.model, *model, *optimizer);
    default_generator().set_state(position.rng_seed, position.rng_offset);
    out << "resumed from " << c.resume << " at epoch " << position.epoch + 1 << ", step " << position.step << "\n";
  }
  std::optional<MetricsLog> log;
  if (!c.log_file.empty() && rank == 0) log.emplace(c.log_file);

  // --amp: forward and loss under autocast (parameters and optimizer state stay float32); fp16 also scales the
  // loss against gradient underflow and skips steps whose gradients overflow (GradScaler; under DDP the
  // gradients are averaged first, so every rank skips the same steps); bf16 has float32's range, no scaling.
  if (c.amp != "off" && c.amp != "fp16" && c.amp != "bf16") {
    throw ValueError("--amp: unknown mode \"" + c.amp + "\"; choose off, fp16 or bf16");
  }
  if (c.amp != "off" && c.parallel == "dp") {
    throw ValueError("--amp " + c.amp + " with --parallel dp: DataParallel's replica threads do not inherit the "
                     "autocast scope; use --parallel ddp (or none)");
  }
  const bool amp = c.amp != "off";
  const DType amp_dtype = c.amp == "fp16" ? DType::f16 : DType::bf16;
  const DeviceType amp_device = model->parameters().empty() ? DeviceType::kCPU : model->parameters()[0].device().type;
  optim::GradScaler scaler({.enabled = c.amp == "fp16"});
  if (scaler.is_enabled() && !position.grad_scaler.empty()) scaler.load_state_dict(position.grad_scaler);

  // With several processes the model is wrapped (rank 0's weights are copied to all) and gradients are
  // averaged in backward; `trained` is what forward runs through.
  std::shared_ptr<distributed::DistributedDataParallel> ddp;
  if (c.sync_batch_norm && !job.group()) {
    throw ValueError("--sync-batch-norm needs several processes (run under syncgrad-launch with --parallel ddp)");
  }
  if (job.group()) {
    if (c.sync_batch_norm) distributed::convert_sync_batchnorm(*model, job.group());
    distributed::DDPOptions options;
    options.bucket_cap_mb = c.bucket_cap_mb;
    options.find_unused_parameters = c.find_unused_parameters;
    options.comm_hook = distributed::make_comm_hook(c.comm_hook);
    ddp = std::make_shared<distributed::DistributedDataParallel>(model, job.group(), options);
  }
  std::shared_ptr<distributed::DataParallel> dp;
  if (c.parallel == "dp") {
    distributed::DataParallelOptions options{.num_workers = c.dp_workers};
    if (device.is_cuda()) options.devices = data_parallel_devices(device, c.dp_workers);
    dp = std::make_shared<distributed::DataParallel>(model, [task] { return task->make_model(nullptr); }, options);
  }
  nn::Module& trained = ddp ? static_cast<nn::Module&>(*ddp) : dp ? static_cast<nn::Module&>(*dp) : *model;

  // Batches come from a DataLoader: RandomSampler(n, seed) at each epoch (or file order), or this rank's shard
  // of a DistributedSampler(n, world, rank, shuffle, seed) whose epoch is set before each epoch. The loader's
  // state is the checkpoint's (epoch, batch_in_epoch).
  std::shared_ptr<const data::Dataset> train_data = task->train_data();
  const int64_t n = train_data->size();
  std::shared_ptr<data::DistributedSampler> shard;
  // For a CUDA device batches are collated into pinned memory and copied while the previous step still runs.
  data::DataLoaderOptions loader_options{
      .batch_size = c.batch_size, .num_workers = c.workers, .pin_memory = device.is_cuda(), .seed = c.seed};
  if (job.group()) {
    shard = std::make_shared<data::DistributedSampler>(n, world, rank, c.shuffle, c.seed);
    loader_options.sampler = shard;
  } else {
    loader_options.shuffle = c.shuffle;
  }
  data::DataLoader loader(train_data, loader_options);
  loader.load_state({position.epoch, position.batch_in_epoch});
  const int64_t batches_per_epoch = loader.num_batches();
  const int64_t steps_per_epoch = (batches_per_epoch + c.accumulate - 1) / c.accumulate;
  const int64_t planned_steps = c.max_steps > 0 ? std::min<int64_t>(c.max_steps, steps_per_epoch * c.epochs)
                                                : steps_per_epoch * c.epochs;
  out << "training " << c.model << " on " << task->description() << ", " << c.epochs << " epoch(s), batch "
      << c.batch_size << (c.accumulate > 1 ? " x " + std::to_string(c.accumulate) + " accumulated" : "") << ", "
      << c.optimizer << " lr " << c.lr << ", "
      << (device.is_cpu() ? std::to_string(c.threads) + " thread(s)" : device.str()) << ", " << c.workers
      << " data worker(s)";
  if (ddp) {
    out << ", " << world << " processes (DDP over " << backend << ", buckets " << c.bucket_cap_mb << " MiB, "
        << c.comm_hook << (c.scale_lr == "linear" ? ", lr x " + std::to_string(world) + " after warm-up" : "")
        << ")";
  }
  if (dp) {
    out << ", DataParallel over " << c.dp_workers
        << (device.is_cuda() ? " GPUs from " + device.str() : std::string(" worker threads"));
  }
  out << "\n";

  TrainSummary summary;
  LossWatch losses(device, rank, c.lr);
  summary.rank = rank;
  summary.world_size = world;
  Allocator& tensor_memory = device.is_cpu() ? cpu_allocator() : device_backend(device.type)->allocator(device.index);
  tensor_memory.reset_peak();
  auto start = Clock::now();
  auto window_start = start;
  double window_wait_start = 0, window_comm = 0, window_exposed = 0;
  double evaluation_seconds = 0;  // periodic held-out evaluations, left out of the throughput
  int64_t window_samples = 0, window_steps = 0;
  bool stop = c.max_steps > 0 && position.step >= c.max_steps;
  for (int epoch = position.epoch; epoch < c.epochs && !stop; ++epoch) {
    if (shard) shard->set_epoch(epoch);
    for (data::Batch& host_batch : loader) {
      const data::Batch batch = device.is_cpu() ? host_batch : on_device(host_batch, device);
      // A step ends after `accumulate` micro-batches or at the end of the epoch.
      const data::LoaderState after = loader.state();
      const bool step_ends = after.epoch != epoch || after.batches_consumed % c.accumulate == 0;
      const bool step_begins = after.epoch == epoch ? (after.batches_consumed - 1) % c.accumulate == 0
                                                    : (batches_per_epoch - 1) % c.accumulate == 0;
      const int64_t len = batch.data.size(0);  // examples in this micro-batch
      if (step_begins) optimizer->zero_grad();
      Tensor loss;
      {
        auto autocast_scope = autocast(amp_device, amp_dtype, amp);
        loss = task->loss(trained, batch);
      }
      Tensor scaled = scaler.scale(c.accumulate > 1 ? div(loss, Scalar(static_cast<double>(c.accumulate))) : loss);
      if (ddp && !step_ends) {
        auto local_only = ddp->no_sync();
        scaled.backward();
      } else {
        scaled.backward();
      }
      losses.add(loss, {position.step + 1, epoch + 1, after.batches_consumed});
      summary.samples += len;
      window_samples += len;
      if (!step_ends) continue;
      optimizer->set_lr(lr_at(c, world, position.step, steps_per_epoch * c.epochs));
      scaler.step(*optimizer);  // a plain optimizer step unless --amp fp16 found inf/NaN gradients
      scaler.update();
      ++position.step;
      ++window_steps;
      if (ddp) {
        window_comm += ddp->last_stats().comm_seconds;
        window_exposed += ddp->last_stats().exposed_seconds;
      }
      const bool evaluate_now = c.eval_every > 0 && position.step % c.eval_every == 0;
      if (position.step % c.log_every == 0 || position.step == planned_steps || evaluate_now) {
        const double loss_value = losses.check();
        double window = seconds_since(window_start);
        double rate = window > 0 ? window_samples * world / window : 0;  // all ranks
        double wait_percent = window > 0 ? 100.0 * (loader.data_wait_seconds() - window_wait_start) / window : 0;
        double elapsed = seconds_since(start);
        double eta = rate > 0 ? (planned_steps - position.step) * static_cast<double>(c.batch_size * c.accumulate *
                                                                                      world) / rate
                              : 0;
        char head[200];
        std::snprintf(head, sizeof head, "epoch %d/%d  step %lld/%lld  loss %.4f  %.0f %s/s  data-wait %.1f%%",
                      epoch + 1, c.epochs, static_cast<long long>(position.step),
                      static_cast<long long>(planned_steps), loss_value, rate * task->units_per_example(),
                      task->rate_unit().c_str(), wait_percent);
        std::string line = head;
        if (ddp && window > 0) {
          // Exposed communication: the share of the window backward's end spent waiting for reductions; the
          // rest of the reductions' time ran hidden behind backward (overlap).
          const double overlapped = window_comm > 0 ? 100.0 * (1.0 - std::min(1.0, window_exposed / window_comm)) : 0;
          char comm[120];
          std::snprintf(comm, sizeof comm, "  comm exposed %.1f%% (%.0f%% of %.1f ms/step hidden)",
                        100.0 * window_exposed / window, overlapped,
                        1e3 * window_comm / std::max<int64_t>(1, window_steps));
          line += comm;
        }
        if (amp) {
          char precision[80];
          if (scaler.is_enabled()) {
            std::snprintf(precision, sizeof precision, "  amp fp16 scale %g skipped %lld", scaler.get_scale(),
                          static_cast<long long>(scaler.skipped_steps()));
          } else {
            std::snprintf(precision, sizeof precision, "  amp %s", c.amp.c_str());
          }
          line += precision;
        }
        if (rank == 0) {
          const std::string extra = task->progress_fields(*model, rate);
          if (!extra.empty()) line += "  " + extra;
        }
        if (evaluate_now) {
          const auto evaluation_start = Clock::now();
          if (rank == 0) line += "  " + task->evaluate(*model).text;
          job.barrier();
          evaluation_seconds += seconds_since(evaluation_start);
        }
        line += "  ETA " + format_duration(eta) + "\n";
        out << line << std::flush;
        if (log) {
          log->write({position.step, epoch + 1, loss_value, optimizer->lr(), rate, elapsed, wait_percent,
                      scaler.is_enabled() ? scaler.get_scale() : 1.0, scaler.skipped_steps()});
        }
        window_start = Clock::now();
        window_wait_start = loader.data_wait_seconds();
        window_samples = window_steps = 0;
        window_comm = window_exposed = 0;
      }
      if (c.max_steps > 0 && position.step >= c.max_steps) {
        stop = true;
        break;
      }
    }
    const data::LoaderState next = loader.state();
    position.epoch = static_cast<int>(next.epoch);
    position.batch_in_epoch = next.batches_consumed;
    position.rng_seed = default_generator().seed();
    position.rng_offset = default_generator().offset();
    position.grad_scaler = scaler.state_dict();
    losses.check();  // never save weights trained on a non-finite loss
    if (!c.checkpoint_dir.empty()) {
      if (rank == 0) {
        save_checkpoint(c.checkpoint_dir, c.model, *model, *optimizer, position, c);
        out << "checkpoint saved to " << c.checkpoint_dir << " (step " << position.step << ")\n";
      }
      job.barrier();
    }
  }
  summary.wall_seconds = seconds_since(start) - evaluation_seconds;
  summary.steps = position.step;
  summary.samples_per_second = summary.wall_seconds > 0 ? summary.samples * world / summary.wall_seconds : 0;
  summary.rate_unit = task->rate_unit();
  summary.units_per_example = task->units_per_example();
  if (rank == 0) summary.evaluation = task->evaluate(*model);
  job.barrier();
  summary.peak_tensor_bytes = tensor_memory.stats().peak_allocated_bytes;
  summary.device = device;
  summary.peak_rss_kib = peak_rss_kib();
  return summary;
}

}  // namespace syncgrad::train
