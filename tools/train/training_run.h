// One syncgrad-train run, set up: what the loop (trainer.cpp) trains with. Built from the TrainConfig in the
// order the run depends on: the device and the process group (group_membership.h), the check that every rank
// has the same options (rank_agreement.h), the option combinations that cannot work, the --checkpoint-dir lock
// (tensor/io/directory_lock.h), the task (tools/train/task.h) and its model initialised from --seed (or
// --init-from) on the device, the optimizer, the resumed position (training_checkpoint.h; the ranks must agree
// on it and on the optimizer), the metrics log, the GradScaler, the DDP or DataParallel wrapper and the
// DataLoader at the resumed position (its DistributedSampler's settings checked across the ranks); then rank 0
// prints what it will train.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "data/loader.h"
#include "data/sampler.h"
#include "distributed/data_parallel.h"
#include "distributed/ddp.h"
#include "distributed/preemption.h"
#include "nn/module.h"
#include "optim/grad_scaler.h"
#include "distributed/zero_redundancy_optimizer.h"
#include "optim/optimizer.h"
#include "tensor/device.h"
#include "tensor/io/directory_lock.h"
#include "tools/train/checkpoint.h"
#include "tools/train/group_membership.h"
#include "tools/train/loss_watch.h"
#include "tools/train/metrics_log.h"
#include "tools/train/mfu.h"
#include "tools/train/task.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

struct TrainingRun {
  TrainingRun(const TrainConfig& config, std::ostream& console);
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  const TrainConfig& config;
  const Device device;
  const std::string backend;  // the process group's, when there is one: "gloo" or "nccl"
  GroupMembership job;
  const int rank;
  const int world;
  std::ostream silent{nullptr};
  std::ostream& out;  // the console on rank 0; nothing on the other ranks
  std::shared_ptr<const Task> task;
  std::shared_ptr<nn::Module> model;  // unwrapped: what is saved and evaluated
  MfuBasis mfu;                       // the model FLOPs utilisation's FLOPs and peak (mfu.h)
  std::unique_ptr<optim::Optimizer> optimizer;
  optim::ZeroRedundancyOptimizer* zero = nullptr;  // --zero 1|2: `optimizer` itself, sharded across the ranks
  TrainingPosition position;           // where the next batch comes from, and the steps taken
  std::string resumed_from;            // the checkpoint directory --resume loaded ("" for a fresh start)
  // Rank 0 has --checkpoint-dir (told to every rank at start): the ranks wait for its saves (training_checkpoint.h),
  // whether or not they were given the directory themselves.
  bool rank0_saves = false;
  std::optional<io::DirectoryLock> checkpoint_lock;  // rank 0, with --checkpoint-dir: held for the whole run
  std::optional<distributed::PreemptionWatch> preemption;  // with --checkpoint-dir (training_checkpoint.h)
  std::optional<MetricsLog> log;       // rank 0, with --log-file
  LossWatch losses;
  optim::GradScaler scaler;            // enabled with --amp fp16
  DeviceType autocast_device = DeviceType::kCPU;  // where the parameters are
  std::shared_ptr<distributed::DistributedDataParallel> ddp;  // several processes
  std::shared_ptr<distributed::DataParallel> dp;              // --parallel dp
  nn::Module* trained = nullptr;  // what forward runs through: ddp, dp or the model
  // This rank's part of the data: with several processes, and with --elastic also for one (so that a job of
  // any size continues the same order), unless it resumed a single process's checkpoint read in RandomSampler
  // order.
  std::shared_ptr<data::DistributedSampler> shard;
  std::unique_ptr<data::DataLoader> loader;
  int64_t batches_per_epoch = 0;  // of the epoch being trained (a resumed epoch at another world size differs)
  int64_t steps_per_epoch = 0;    // of a whole epoch at this world size
  // The steps of the whole run as now planned, which the LR schedule spans: the steps taken, the rest of the
  // resumed epoch and the remaining epochs (after a change of world size the step count of the resumed epoch
  // differs from the others).
  int64_t total_steps = 0;
  int64_t planned_steps = 0;  // of this run: total_steps, or fewer with --max-steps

 private:
  void build_model();
  void wrap_model();
  void build_loader();
  void plan_steps();
  void restore_comm_state();
  void print_plan() const;
};

}  // namespace syncgrad::train
