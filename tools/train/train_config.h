// The trainer's configuration: every command-line option of syncgrad-train, with PyTorch-tutorial defaults.
// It round-trips through JSON so a checkpoint records the run that wrote it; the choices (train_choices.h) are
// written by name ("off", "bf16", ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tools/train/train_choices.h"
#include "tools/train/trace_steps.h"

namespace syncgrad::train {

struct TrainConfig {
  std::string model = "cnn";
  std::string dataset;   // empty: the model's (tools/train/task.h): fashion-mnist, cifar10 or text
  std::string data_dir;  // empty: the dataset's default location
  int epochs = 1;
  int64_t batch_size = 64;
  double lr = 0.05;
  LrSchedule lr_schedule = LrSchedule::kCosine;  // cosine (annealed from lr to 0 over --epochs) | constant
  OptimizerKind optimizer = OptimizerKind::kSgd;
  double momentum = 0.9;
  double weight_decay = 0.0;
  uint64_t seed = 0;
  int threads = 1;
  DeviceChoice device;    // cpu | cuda (under syncgrad-launch: cuda:LOCAL_RANK) | cuda:N
  int workers = 2;        // DataLoader worker threads (0: batches are assembled in the training thread)
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // steps between checkpoints (0: at the end of every epoch only)
  int keep_checkpoints = 2;      // the newest complete ones kept in checkpoint_dir (0: all)
  double checkpoint_every_minutes = 0;  // wall-clock minutes between checkpoints, on rank 0's clock (0: none)
  // A checkpoint (or --checkpoint-dir of one) to continue from; "auto": the newest complete checkpoint in
  // checkpoint_dir, or a fresh start when it holds none.
  std::string resume;
  // Resuming a checkpoint saved at another world size continues its epoch's remaining samples split among this
  // job's ranks (--elastic, or SYNCGRAD_ELASTIC=1); without it that is refused. Also reads the data through a
  // DistributedSampler at world size 1, so a single process and a job of several share one order.
  bool elastic = false;
  std::string init_from;  // a .safetensors file with model weights to start from
  bool shuffle = true;
  int64_t max_steps = 0;  // 0: no limit
  std::string log_file;   // .csv or .jsonl
  int64_t log_every = 100;
  // auto: ddp when WORLD_SIZE > 1 (under syncgrad-launch), else none; dp: DataParallel over dp_workers threads
  // in this process (--batch-size is then split between them); ddp: DistributedDataParallel + DistributedSampler.
  Parallelism parallel = Parallelism::kAuto;
  int dp_workers = 2;
  BackendChoice backend = BackendChoice::kAuto;  // auto (the device's) | gloo (CPU tensors) | nccl (CUDA tensors)
  int accumulate = 1;                   // micro-batches per optimizer step; DDP reduces once per step (no_sync)
  LrScaling scale_lr = LrScaling::kNone;  // none | linear: lr x world size, reached linearly over warmup_steps
  int64_t warmup_steps = 100;           // with --scale-lr linear
  double bucket_cap_mb = 25;
  CommHookChoice comm_hook;             // allreduce | fp16 | bf16 | powersgd | powersgd:R
  bool find_unused_parameters = false;
  bool sync_batch_norm = false;  // under DDP: BatchNorm layers reduce their batch statistics across ranks
  // Recompute each GPT block's / ResNet stage's activations in backward (nn/checkpoint.h); DDP then runs with
  // static_graph. A run-time choice like --threads: not part of the saved config.
  bool activation_checkpointing = false;
  // ZeRO stage under DDP: 0 off; 1 optimizer state sharded across the ranks (ZeroRedundancyOptimizer); 2 also the
  // gradients (reduce-scattered buckets). Checkpoints hold the consolidated (unsharded) optimizer state.
  int zero = 0;
  // Model sizes as comma-separated key=value pairs, e.g. "n_layer=4,n_embd=128" (gpt); empty: the defaults.
  std::string model_config;
  int64_t eval_every = 0;     // steps between held-out evaluations in the progress line (0: only at the end)
  AmpMode amp = AmpMode::kOff;  // off | fp16 | bf16: autocast the forward pass, with a GradScaler for fp16
  // --timeout / --rendezvous-timeout in seconds; unset: $SYNCGRAD_TIMEOUT / $SYNCGRAD_RENDEZVOUS_TIMEOUT (what
  // syncgrad-launch exports), else 600 s / 300 s. How long to wait is a property of this run on this machine, not
  // of the model: they are not written to the JSON (a resumed run takes its own).
  std::optional<double> timeout_seconds{};
  std::optional<double> rendezvous_timeout_seconds{};
  // --trace FILE: a timeline of the run for Perfetto / chrome://tracing (run_trace.h), of the steps in
  // --trace-steps, with autograd nodes of at least --trace-min-us; like the timeouts, not written to the JSON.
  std::string trace_file;
  TraceSteps trace_steps;
  int64_t trace_min_us = 50;

  std::string to_json() const;
  static TrainConfig from_json(const std::string& text);
};

}  // namespace syncgrad::train
