// Setting up a syncgrad-train run (see training_run.h).
#include "tools/train/training_run.h"

#include <iostream>

#include "data/data_position.h"
#include "distributed/comm_hook.h"
#include "distributed/comm_state_io.h"
#include "distributed/host_values.h"
#include "distributed/sync_batch_norm.h"
#include "models/activation_checkpointing.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "syncgrad.h"
#include "tensor/check.h"
#include "tools/train/rank_agreement.h"
#include "tools/train/training_checkpoint.h"
#include "tools/train/training_device.h"

namespace syncgrad::train {
namespace {

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<Tensor> params) {
  switch (c.optimizer) {
    case OptimizerKind::kSgd:
      return std::make_unique<optim::SGD>(
          params, optim::SGDOptions{.lr = c.lr, .momentum = c.momentum, .weight_decay = c.weight_decay});
    case OptimizerKind::kAdam:
      return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
    case OptimizerKind::kAdamW:
      return std::make_unique<optim::AdamW>(params,
                                            optim::AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  }
  throw ValueError("--optimizer: no optimizer for \"" + to_string(c.optimizer) + "\"");
}

std::shared_ptr<distributed::CommHook> make_comm_hook(const CommHookChoice& hook) {
  switch (hook.kind) {
    case CommHookChoice::Kind::kAllreduce:
      return distributed::allreduce_hook();
    case CommHookChoice::Kind::kFp16:
      return distributed::fp16_compress_hook();
    case CommHookChoice::Kind::kBf16:
      return distributed::bf16_compress_hook();
    case CommHookChoice::Kind::kPowerSGD: {
      distributed::PowerSGDOptions options;
      options.matrix_approximation_rank = hook.powersgd_rank.value_or(1);
      return distributed::powersgd_hook(options);
    }
  }
  throw ValueError("--comm-hook: no hook for \"" + to_string(hook) + "\"");
}

// The combinations of options that cannot work, refused before any data is read.
void check_combinations(const TrainConfig& c, bool several_processes) {
  // --amp: forward and loss under autocast (parameters and optimizer state stay float32); fp16 also scales the
  // loss against gradient underflow and skips steps whose gradients overflow (GradScaler; under DDP the
  // gradients are averaged first, so every rank skips the same steps); bf16 has float32's range, no scaling.
  SYNCGRAD_CHECK(c.amp == AmpMode::kOff || c.parallel != Parallelism::kDataParallel, ValueError, "--amp ",
                 to_string(c.amp),
                 " with --parallel dp: DataParallel's replica threads do not inherit the autocast scope; use "
                 "--parallel ddp (or none)");
  SYNCGRAD_CHECK(!c.activation_checkpointing || c.parallel != Parallelism::kDataParallel, ValueError,
                 "--activation-checkpointing with --parallel dp: DataParallel's replicas are built without it; use "
                 "--parallel ddp (or none)");
  SYNCGRAD_CHECK(c.zero == 0 || c.parallel != Parallelism::kDataParallel, ValueError, "--zero ", c.zero,
                 " with --parallel dp: ZeRO shards across processes; use --parallel ddp");
  SYNCGRAD_CHECK(c.zero == 0 || several_processes, ValueError, "--zero ", c.zero,
                 " shards the optimizer across DDP's ranks and needs several processes: run under syncgrad-launch "
                 "with --parallel ddp (or drop --zero)");
  SYNCGRAD_CHECK(c.zero != 2 || c.comm_hook.kind == CommHookChoice::Kind::kAllreduce, ValueError,
                 "--zero 2 reduce-scatters the gradient buckets itself and takes no --comm-hook (got ",
                 to_string(c.comm_hook), "); use --zero 1 with a comm hook, or drop --comm-hook");
  SYNCGRAD_CHECK(!c.sync_batch_norm || several_processes, ValueError,
                 "--sync-batch-norm needs several processes (run under syncgrad-launch with --parallel ddp)");
}

// --activation-checkpointing: only models with blocks to checkpoint take it.
void enable_activation_checkpointing(nn::Module& model, const std::string& name) {
  SYNCGRAD_CHECK(models::supports_activation_checkpointing(model), ValueError,
                 "--activation-checkpointing: --model ", name, " (", model.type_name(),
                 ") has no blocks to checkpoint; it applies to --model gpt (each transformer block) and the "
                 "resnets (each stage)");
  models::set_activation_checkpointing(model, true);
}

}  // namespace

TrainingRun::TrainingRun(const TrainConfig& c, std::ostream& console)
    : config(c),
      device(resolve_training_device(c)),
      backend(resolve_backend(c, device)),
      job(c, backend, device),
      rank(job.rank()),
      world(job.world_size()),
      out(rank == 0 ? console : silent),
      losses(device, rank, c.lr),
      scaler({.enabled = c.amp == AmpMode::kFp16}) {
  // Ranks started with different options would train apart (or disagree on the step count): refused on every
  // rank, first thing after joining, naming the first difference (rank_agreement.h).
  if (job.group()) check_ranks_agree_on_options(*job.group(), c);
  rank0_saves = !c.checkpoint_dir.empty();
  if (job.group()) {
    rank0_saves = distributed::PendingValues::broadcast(*job.group(), {rank0_saves ? 1 : 0}, 0).wait()[0][0] != 0;
  }
  check_combinations(c, job.group() != nullptr);
  if (!c.checkpoint_dir.empty() && rank == 0) {
    ensure_writable_directory(c.checkpoint_dir);
    // Two runs saving to one directory would overwrite each other's checkpoints: the second is refused here,
    // before any training, naming the first (a lock left by a killed run is free: see directory_lock.h).
    checkpoint_lock.emplace(c.checkpoint_dir, "--checkpoint-dir");
  }
  watch_for_preemption(*this);
  task = make_task(c);
  build_model();
  mfu = mfu_basis(*task, *model, device,
                  c.threads * (c.parallel == Parallelism::kDataParallel ? c.dp_workers : 1) * world);
  if (!c.resume.empty()) resume_from_checkpoint(*this);
  if (job.group()) check_ranks_agree_on_state(*this);
  if (!c.log_file.empty() && rank == 0) log.emplace(c.log_file);
  if (scaler.is_enabled() && !position.grad_scaler.empty()) scaler.load_state_dict(position.grad_scaler);
  wrap_model();
  restore_comm_state();
  build_loader();
  plan_steps();
  print_plan();
}

// The comm hook's state saved with the checkpoint (PowerSGD's error feedback and warm-start factors, per rank);
// after a change of world size only the step count carries over (comm_state_io.h).
void TrainingRun::restore_comm_state() {
  if (position.comm_state.empty()) return;
  const std::string file = resumed_from + "/" + kCommStateFileName;
  if (ddp) {
    distributed::restore_comm_state(*ddp, position.comm_state, position.world_size, file,
                                    rank == 0 ? std::cerr : silent);
  } else if (rank == 0) {
    std::cerr << "warning: " << file << ": the comm hook state of the " << position.world_size
              << " ranks that saved it is not used by a single process\n";
  }
  position.comm_state.clear();
}

// The model's initial weights come from --seed (or --init-from); the default generator (dropout, shuffling
// seeds) is seeded after.
void TrainingRun::build_model() {
  Generator init_gen(config.seed);
  model = task->make_model(&init_gen);
  if (config.activation_checkpointing) enable_activation_checkpointing(*model, config.model);
  if (!config.init_from.empty()) load_weights(config.init_from, *model);
  model->to(device);
  if (config.zero > 0) {
    const TrainConfig& c = config;
    auto zero_optimizer = std::make_unique<optim::ZeroRedundancyOptimizer>(
        model->parameters(), job.group(),
        [&c](std::vector<Tensor> shards) { return make_optimizer(c, std::move(shards)); },
        optim::ZeroOptions{.first_bucket_mb = distributed::DDPOptions{}.first_bucket_mb,
                           .bucket_cap_mb = c.bucket_cap_mb});
    zero = zero_optimizer.get();
    optimizer = std::move(zero_optimizer);
  } else {
    optimizer = make_optimizer(config, model->parameters());
  }
  manual_seed(config.seed);
  autocast_device = model->parameters().empty() ? DeviceType::kCPU : model->parameters()[0].device().type;
}

// With several processes the model is wrapped (rank 0's weights are copied to all) and gradients are averaged
// in backward; with --parallel dp it is replicated over threads (or GPUs) of this process.
void TrainingRun::wrap_model() {
  const TrainConfig& c = config;
  if (job.group()) {
    if (c.sync_batch_norm) distributed::convert_sync_batchnorm(*model, job.group());
    distributed::DDPOptions options;
    options.bucket_cap_mb = c.bucket_cap_mb;
    options.find_unused_parameters = c.find_unused_parameters;
    // Reentrant checkpointing delivers a block's parameter gradients from a nested backward.
    options.static_graph = c.activation_checkpointing;
    // --zero 2: DDP installs its reduce-scatter hook (check_combinations refused any other --comm-hook).
    if (c.zero != 2) options.comm_hook = make_comm_hook(c.comm_hook);
    options.gradient_sharding = c.zero == 2;
    ddp = std::make_shared<distributed::DistributedDataParallel>(model, job.group(), options);
    if (c.zero == 2) zero->use_gradient_shards(*ddp);
  }
  if (c.parallel == Parallelism::kDataParallel) {
    distributed::DataParallelOptions options;
    options.num_workers = c.dp_workers;
    if (device.is_cuda()) options.devices = data_parallel_devices(device, c.dp_workers);
    std::shared_ptr<const Task> replica_task = task;
    dp = std::make_shared<distributed::DataParallel>(
        model, [replica_task] { return replica_task->make_model(nullptr); }, options);
  }
  trained = ddp ? static_cast<nn::Module*>(ddp.get()) : dp ? static_cast<nn::Module*>(dp.get()) : model.get();
}

// Batches come from a DataLoader: RandomSampler(n, seed) at each epoch (or file order), or this rank's shard of
// a DistributedSampler(n, world, rank, shuffle, seed) whose epoch is set before each epoch. The loader's state
// is the checkpoint's (epoch, batch_in_epoch).
void TrainingRun::build_loader() {
  const TrainConfig& c = config;
  std::shared_ptr<const data::Dataset> train_data = task->train_data();
  // For a CUDA device batches are collated into pinned memory and copied while the previous step still runs.
  data::DataLoaderOptions options{
      .batch_size = c.batch_size, .num_workers = c.workers, .pin_memory = device.is_cuda(), .seed = c.seed};
  const bool random_order_resumed = !resumed_from.empty() && !position.distributed_order;
  if (job.group() || (c.elastic && !random_order_resumed)) {
    shard = std::make_shared<data::DistributedSampler>(train_data->size(), world, rank, c.shuffle, c.seed);
    if (job.group()) distributed::check_sampler_agrees(*job.group(), *shard);  // the same data on every rank
    options.sampler = shard;
  } else {
    options.shuffle = c.shuffle;
  }
  loader = std::make_unique<data::DataLoader>(train_data, options);
  const int64_t saved_world = position.world_size > 0 ? position.world_size : world;
  if (shard) {
    data::restore_data_position(*loader, {.epoch = position.epoch, .batches_consumed = position.batch_in_epoch,
                                          .epoch_start = position.epoch_start,
                                          .global_position = position.samples_consumed, .world_size = saved_world},
                                world);
  } else {
    loader->load_state({position.epoch, position.batch_in_epoch});
  }
  if (saved_world != world) {
    out << "elastic resume: the checkpoint's " << saved_world << " rank(s) consumed " << position.samples_consumed
        << " of epoch " << position.epoch + 1 << "'s " << train_data->size() << " samples; the other "
        << train_data->size() - position.samples_consumed << " are split among " << world
        << " rank(s), batch " << c.batch_size << " per rank (global " << c.batch_size * c.accumulate * world
        << ", was " << c.batch_size * c.accumulate * saved_world << ")\n";
  }
  batches_per_epoch = loader->num_batches();  // of the resumed epoch: its sampler is at it
}

void TrainingRun::plan_steps() {
  const TrainConfig& c = config;
  const auto steps_of = [&](int64_t batches) { return (batches + c.accumulate - 1) / c.accumulate; };
  // An epoch other than the resumed one (which may have fewer samples per rank after a change of world size).
  const int64_t whole_epoch_batches =
      shard ? (shard->size_of_epoch(position.epoch + 1) + c.batch_size - 1) / c.batch_size : loader->num_batches();
  steps_per_epoch = steps_of(whole_epoch_batches);
  const data::LoaderState next = loader->state();
  if (next.epoch >= c.epochs) {
    total_steps = position.step;
  } else {
    total_steps = position.step + steps_of(batches_per_epoch - next.batches_consumed) +
                  (c.epochs - next.epoch - 1) * steps_per_epoch;
  }
  planned_steps = c.max_steps > 0 ? std::min<int64_t>(c.max_steps, total_steps) : total_steps;
}

// E.g. "training mlp on 60000 images (...), 1 epoch(s), batch 64, sgd lr 0.05, 1 thread(s), 2 data worker(s)";
// under DDP the batch is per rank, and the line also gives the global one ("batch 64 per rank, global 128").
void TrainingRun::print_plan() const {
  const TrainConfig& c = config;
  const std::string accumulated = c.accumulate > 1 ? " x " + std::to_string(c.accumulate) + " accumulated" : "";
  out << "training " << c.model << " on " << task->description() << ", " << c.epochs << " epoch(s), batch "
      << c.batch_size << accumulated;
  if (ddp) out << " per rank, global " << c.batch_size * c.accumulate * world;
  out << ", "
      << to_string(c.optimizer) << " lr " << c.lr << ", "
      << (device.is_cpu() ? std::to_string(c.threads) + " thread(s)" : device.str()) << ", " << c.workers
      << " data worker(s)";
  if (ddp) {
    out << ", " << world << " processes (DDP over " << backend << ", buckets " << c.bucket_cap_mb << " MiB, "
        << to_string(c.comm_hook)
        << (c.scale_lr == LrScaling::kLinear ? ", lr x " + std::to_string(world) + " after warm-up" : "")
        << (c.zero > 0 ? ", ZeRO-" + std::to_string(c.zero) : "") << ")";
  }
  if (dp) {
    out << ", DataParallel over " << c.dp_workers
        << (device.is_cuda() ? " GPUs from " + device.str() : std::string(" worker threads"));
  }
  if (mfu.known()) out << "; " << mfu.describe();
  out << "\n";
}

}  // namespace syncgrad::train
