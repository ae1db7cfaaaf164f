// syncgrad-train: trains a bundled model (Fashion-MNIST, CIFAR-10 or a text file; tools/train/task.h). With no arguments it trains the CNN for one epoch
// on the data Debian's dataset-fashion-mnist installs and prints the test accuracy (the README's main job).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "data/loader_options.h"
#include "syncgrad.h"
#include "tools/cli_checks.h"
#include "tools/train/trainer.h"
#include "tools/train/training_checkpoint.h"

namespace train = syncgrad::train;
namespace cli = syncgrad::cli;
using train::TrainConfig;

namespace {

constexpr long long kMaxInt = std::numeric_limits<int>::max();
constexpr long long kMaxDataParallelReplicas = 256;  // threads (or GPUs) of one process

// An option whose value is one of an enum's names (train/train_choices.h): CLI11 checks the name, `parse` turns
// it into the enum.
template <typename Choice>
CLI::Option* add_choice(CLI::App& app, const std::string& flag, Choice& field, Choice (*parse)(const std::string&),
                        const std::vector<std::string>& names, const std::string& help) {
  return app.add_option_function<std::string>(flag, [&field, parse](const std::string& text) { field = parse(text); },
                                              help)
      ->check(CLI::IsMember(names))
      ->default_str(train::to_string(field));
}

// An option parsed into a structured choice; the parser's ValueError (naming the value) ends the program.
template <typename Choice>
CLI::Option* add_parsed(CLI::App& app, const std::string& flag, Choice& field, Choice (*parse)(const std::string&),
                        const std::string& help) {
  return app.add_option_function<std::string>(flag, [&field, parse](const std::string& text) { field = parse(text); },
                                              help)
      ->default_str(train::to_string(field));
}

// A timeout in seconds, checked as syncgrad-launch checks its own (distributed/launch_env.h).
void add_timeout(CLI::App& app, const std::string& flag, std::optional<double>& field, const std::string& help) {
  app.add_option_function<std::string>(
         flag, [&field](const std::string& text) { field = std::strtod(text.c_str(), nullptr); }, help)
      ->type_name("SECONDS")
      ->check(CLI::Validator(
          [](std::string& text) {
            return syncgrad::distributed::parse_timeout_seconds(text)
                       ? std::string()
                       : text + " is not " + syncgrad::distributed::timeout_range_text();
          },
          "seconds in [0.001, 604800]"));
}

// What to train on what, for how long, and how it learns.
void add_model_options(CLI::App& app, TrainConfig& c) {
  app.add_option("--model", c.model,
                 "model to train: mlp (784-256-256-10), cnn (2 conv + 2 linear), resnet18 / resnet20 (CIFAR "
                 "variants) or gpt (a small decoder-only transformer, see --model-config)")
      ->check(CLI::IsMember(train::trainer_model_names()))
      ->capture_default_str();
  app.add_option("--dataset", c.dataset,
                 "fashion-mnist (mlp, cnn), cifar10 (resnet*) or text (gpt); default: the model's")
      ->check(CLI::IsMember(train::trainer_dataset_names()));
  app.add_option("--data-dir", c.data_dir,
                 "where the data is. fashion-mnist: the IDX files (train-images-idx3-ubyte.gz, ...), default "
                 "/usr/share/datasets/fashion-mnist from Debian's dataset-fashion-mnist, or $SYNCGRAD_DATA_DIR; "
                 "cifar10: the cifar-10-batches-bin directory (data_batch_1.bin .. test_batch.bin), or "
                 "$SYNCGRAD_CIFAR10_DIR; text: a text file or a directory of them");
  app.add_option("--model-config", c.model_config, "model sizes as key=value pairs, e.g. n_layer=4,n_embd=128 (gpt)");
  app.add_option("--eval-every", c.eval_every, "steps between held-out evaluations shown in the progress line (0: at "
                 "the end only)")
      ->check(cli::at_least(0))
      ->capture_default_str();
  app.add_option("--epochs", c.epochs, "passes over the training set")
      ->check(cli::whole_in(1, kMaxInt))
      ->capture_default_str();
  app.add_option("--batch-size", c.batch_size,
                 "samples per optimizer step and process: under DDP each rank takes this many, so the global batch "
                 "is --batch-size x --accumulate x world size (the start-up line prints it)")
      ->check(cli::at_least(1))
      ->capture_default_str();
  app.add_option("--lr", c.lr, "learning rate (the peak, with --lr-schedule cosine)")
      ->check(cli::real_at_least(0))
      ->capture_default_str();
  add_choice(app, "--lr-schedule", c.lr_schedule, train::parse_lr_schedule, train::lr_schedule_names(),
             "cosine: anneal the learning rate from --lr to 0 over --epochs (--max-steps stops early on the same "
             "curve); constant: --lr throughout");
  add_choice(app, "--optimizer", c.optimizer, train::parse_optimizer_kind, train::optimizer_kind_names(),
             "sgd (with --momentum), adam or adamw");
  app.add_option("--momentum", c.momentum, "SGD momentum")->check(cli::real_at_least(0))->capture_default_str();
  app.add_option("--weight-decay", c.weight_decay, "weight decay (L2 for sgd/adam, decoupled for adamw)")
      ->check(cli::real_at_least(0))
      ->capture_default_str();
}

// Where and how fast: seed, threads, device, data workers; the files a run reads and writes.
void add_run_options(CLI::App& app, TrainConfig& c) {
  app.add_option("--seed", c.seed, "seed for initialisation, shuffling and random ops")->capture_default_str();
  app.add_option("--threads", c.threads, "intra-op CPU threads (at most 4 per hardware thread of this machine)")
      ->check(CLI::Validator(
          [](std::string& text) {
            const long threads = std::strtol(text.c_str(), nullptr, 10);
            const long most = 4L * std::max(1u, std::thread::hardware_concurrency());
            return threads >= 1 && threads <= most
                       ? std::string()
                       : text + " is out of range: use 1 to " + std::to_string(most) + " (this machine has " +
                             std::to_string(most / 4) + " hardware threads)";
          },
          "1 to 4 per hardware thread"))
      ->capture_default_str();
  add_parsed(app, "--device", c.device, train::parse_device_choice,
             "where to train: cpu, cuda (one GPU per process; under syncgrad-launch rank r of a node takes "
             "cuda:LOCAL_RANK) or cuda:N");
  app.add_option("--workers", c.workers,
                 "data-loading worker threads, at most " + std::to_string(syncgrad::data::kMaxNumWorkers) +
                     " (0: assemble batches in the training thread)")
      ->check(cli::whole_in(0, syncgrad::data::kMaxNumWorkers))
      ->capture_default_str();
  app.add_option("--checkpoint-dir", c.checkpoint_dir,
                 "save a checkpoint here after every epoch (and every --checkpoint-every steps): a directory "
                 "step-NNNNNN/ with model.safetensors, training_state.safetensors and manifest.json, renamed into "
                 "place when complete; latest/ points at the newest");
  app.add_option("--checkpoint-every", c.checkpoint_every, "steps between checkpoints (0: at the end of each epoch only)")
      ->check(cli::at_least(0))
      ->capture_default_str();
  app.add_option("--checkpoint-every-minutes", c.checkpoint_every_minutes,
                 "wall-clock minutes between checkpoints, on rank 0's clock (every rank saves after the same step; "
                 "0: none); needs --checkpoint-dir")
      ->check(cli::real_at_least(0))
      ->capture_default_str();
  app.add_option("--keep-checkpoints", c.keep_checkpoints,
                 "keep the newest K complete checkpoints in --checkpoint-dir, removing older ones once a new one is "
                 "complete (0: keep all)")
      ->check(cli::whole_in(0, kMaxInt))
      ->capture_default_str();
  app.add_option("--resume", c.resume,
                 "continue exactly from a checkpoint: a --checkpoint-dir (its newest complete checkpoint; newer "
                 "incomplete or damaged ones are skipped with a warning), one of its step-NNNNNN directories, or "
                 "auto (the newest of --checkpoint-dir, or a fresh start when there is none)");
  app.add_flag("--elastic", c.elastic,
               "allow --resume from a checkpoint saved at another world size: the epoch's remaining samples are "
               "split among this job's ranks (each seen once), the batch stays per rank; also on with "
               "SYNCGRAD_ELASTIC=1, which syncgrad-launch exports to elastic jobs");
  app.add_option("--init-from", c.init_from,
                 "start from the weights in this .safetensors file (PyTorch key names, e.g. fc1.weight)");
  app.add_flag("--no-shuffle", [&c](int64_t) { c.shuffle = false; }, "visit training samples in file order");
  app.add_option("--max-steps", c.max_steps, "stop after this many optimizer steps in total (0: no limit)")
      ->check(cli::at_least(0))
      ->capture_default_str();
  app.add_option("--log-file", c.log_file, "append per-step metrics here: .csv or .jsonl");
  app.add_option("--log-every", c.log_every, "steps between progress lines and log rows")
      ->check(cli::at_least(1))
      ->capture_default_str();
}

// Printing only: not part of the run's configuration (nor of its checkpoints).
struct ReportOptions {
  bool ddp_logging_data = false;
};

void add_report_options(CLI::App& app, ReportOptions& r) {
  app.add_flag("--ddp-logging-data", r.ddp_logging_data,
               "under DDP, print rank 0's DistributedDataParallel::logging_data() after the run: buckets, "
               "rebuild, unused parameters, comm hook, and the last steps' forward, backward and communication "
               "times with their overlap");
}

// Multi-process training: run under syncgrad-launch (WORLD_SIZE > 1), e.g.
//   syncgrad-launch --nproc-per-node 2 syncgrad-train --model cnn
// and mixed precision.
void add_parallel_options(CLI::App& app, TrainConfig& c) {
  add_choice(app, "--parallel", c.parallel, train::parse_parallelism, train::parallelism_names(),
             "auto (ddp under syncgrad-launch, else none), none, dp (DataParallel over --dp-workers threads in this "
             "process) or ddp (DistributedDataParallel, one process per rank)");
  app.add_option("--dp-workers", c.dp_workers, "replicas (threads) for --parallel dp")
      ->check(cli::whole_in(1, kMaxDataParallelReplicas))
      ->capture_default_str();
  add_choice(app, "--backend", c.backend, train::parse_backend_choice, train::backend_choice_names(),
             "process-group backend when WORLD_SIZE > 1: auto (nccl with --device cuda, else gloo), gloo (CPU "
             "tensors) or nccl (CUDA tensors)");
  app.add_option("--accumulate", c.accumulate,
                 "micro-batches of --batch-size per optimizer step (gradients are reduced once per step)")
      ->check(cli::whole_in(1, kMaxInt))
      ->capture_default_str();
  add_choice(app, "--scale-lr", c.scale_lr, train::parse_lr_scaling, train::lr_scaling_names(),
             "none, or linear: lr x world size, warmed up over --warmup-steps");
  app.add_option("--warmup-steps", c.warmup_steps, "steps to reach the scaled lr with --scale-lr linear")
      ->check(cli::at_least(0))
      ->capture_default_str();
  app.add_option("--bucket-cap-mb", c.bucket_cap_mb, "DDP gradient bucket size in MiB")
      ->check(CLI::Validator(
          [](std::string& text) {
            const double mib = std::strtod(text.c_str(), nullptr);
            return mib > 0 && mib <= syncgrad::distributed::kMaxBucketMiB
                       ? std::string()
                       : text + " is not a number of MiB above 0 and at most 1048576";
          },
          "MiB in (0, 1048576]"))
      ->capture_default_str();
  add_parsed(app, "--comm-hook", c.comm_hook, train::parse_comm_hook_choice,
             "DDP gradient reduction: allreduce, fp16, bf16, powersgd or powersgd:R");
  app.add_flag("--find-unused-parameters", c.find_unused_parameters,
               "let DDP tolerate parameters that get no gradient in a step");
  app.add_flag("--activation-checkpointing", c.activation_checkpointing,
               "keep no activations of the GPT's transformer blocks (or the ResNet's stages) for backward and "
               "recompute them there: less memory for about one more forward; the same gradients");
  app.add_option("--zero", c.zero,
                 "ZeRO stage under DDP: 0 off, 1 shard the optimizer state across the ranks, 2 also the gradients")
      ->check(CLI::IsMember({0, 1, 2}))
      ->capture_default_str();
  app.add_flag("--sync-batch-norm", c.sync_batch_norm,
               "under DDP, BatchNorm layers use the batch statistics of all ranks (SyncBatchNorm)");
  add_timeout(app, "--timeout", c.timeout_seconds,
              "seconds a collective may take before the run fails with a TimeoutError naming the silent rank "
              "(default: $SYNCGRAD_TIMEOUT, which syncgrad-launch --timeout sets, else 600)");
  add_timeout(app, "--rendezvous-timeout", c.rendezvous_timeout_seconds,
              "seconds joining the job may take (reaching the store, meeting the other ranks) before the run fails "
              "naming the ranks that never arrived (default: $SYNCGRAD_RENDEZVOUS_TIMEOUT, else 300)");
  add_choice(app, "--amp", c.amp, train::parse_amp_mode, train::amp_mode_names(),
             "mixed precision: off, bf16 (forward under bfloat16 autocast) or fp16 (float16 autocast with dynamic "
             "loss scaling); parameters and optimizer state stay float32");
}

// --trace and its window: a timeline for Perfetto / chrome://tracing (tools/train/run_trace.h).
void add_trace_options(CLI::App& app, TrainConfig& c) {
  CLI::Option* trace = app.add_option("--trace", c.trace_file,
                 "write a timeline of the run here (trace-event JSON: open it in ui.perfetto.dev or chrome://tracing): "
                 "per rank and thread, the steps' data wait, forward, backward, DDP bucket copies / launches / "
                 "reductions / write-back, optimizer step, checkpoints, evaluation and slow autograd nodes; rank 0 "
                 "writes one file for the whole job")
      ->type_name("FILE")
      ->check(CLI::Validator(
          [](std::string& path) {
            try {
              syncgrad::profiler::check_trace_path(path);
              return std::string();
            } catch (const syncgrad::IOError& e) {
              return std::string(e.what());
            }
          },
          "a writable file path"));
  add_parsed(app, "--trace-steps", c.trace_steps, train::parse_trace_steps,
             "with --trace: record only optimizer steps A to B (A:B, counted from 1 as the progress lines count)")
      ->type_name("A:B")
      ->needs(trace);
  app.add_option("--trace-min-us", c.trace_min_us,
                 "with --trace: leave out autograd nodes shorter than this many microseconds")
      ->check(cli::whole_in(0, 60'000'000))
      ->capture_default_str()
      ->needs(trace);
}

// The job's result line, e.g. "done: 938 steps in 41.2 s, 1456 samples/s, test accuracy 86.31%, peak ...".
void print_summary(const train::TrainSummary& s) {
  const std::string memory = s.device.is_cpu() ? "peak tensor memory" : "peak " + s.device.str() + " memory";
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.0f samples/s", s.samples_per_second);
  std::string rates = rate;
  if (s.rate_unit != "samples") {
    std::snprintf(rate, sizeof rate, " (%.0f %s/s)", s.samples_per_second * s.units_per_example, s.rate_unit.c_str());
    rates += rate;
  }
  char state[64] = "";
  if (s.device.is_cpu()) {
    std::snprintf(state, sizeof state, ", optimizer state %.1f MiB", s.optimizer_state_bytes / 1048576.0);
  }
  std::printf("done: %lld steps in %.1f s, %s, %s, %s %.1f MiB%s, peak RSS %.1f MiB\n",
              static_cast<long long>(s.steps), s.wall_seconds, rates.c_str(), s.evaluation.text.c_str(), memory.c_str(),
              s.peak_tensor_bytes / 1048576.0, state, s.peak_rss_kib / 1024.0);
}

void print_ddp_logging_data(const train::TrainSummary& s) {
  if (!s.ddp_logging) {
    std::printf("DDP logging data: none (the run did not use DistributedDataParallel)\n");
    return;
  }
  std::printf("DDP logging data (rank 0):\n%s", syncgrad::distributed::to_string(*s.ddp_logging).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a pipe (syncgrad-launch, srun, a log): a line printed is never lost with a killed
  // process, and "resumed from ..." or "checkpoint saved ..." shows when it happens, not at exit.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  CLI::App app{"syncgrad-train: train a bundled model: mlp/cnn on Fashion-MNIST (inputs scaled to [0,1], normalised "
               "with mean 0.2860, std 0.3530), resnet18/resnet20 on CIFAR-10, gpt on text. With no arguments: the "
               "CNN for one epoch on Fashion-MNIST, then the test accuracy. With --checkpoint-dir, SIGTERM or SIGUSR1 "
               "(to syncgrad-launch or to any rank) makes every rank finish its step and save it, then exit with "
               "status 75 (preempted, resumable: continue with --resume auto)."};
  TrainConfig config;
  add_model_options(app, config);
  add_run_options(app, config);
  add_parallel_options(app, config);
  ReportOptions report;
  add_report_options(app, report);
  add_trace_options(app, config);
  try {
    app.parse(argc, argv);  // --device and --comm-hook values that do not parse throw syncgrad::ValueError
    config.elastic = config.elastic || syncgrad::distributed::elastic_requested_by_environment();
    const train::TrainSummary s = train::run_training(config, std::cout);
    if (s.rank == 0) print_summary(s);  // rank 0 reports for the job
    if (s.rank == 0 && report.ddp_logging_data) print_ddp_logging_data(s);
    return 0;
  } catch (const train::Preempted& p) {
    if (!p.checkpoint.empty()) {  // rank 0 reports for the job
      const std::string why = p.signal != 0 ? std::string("SIG") + sigabbrev_np(p.signal) : "a signal to another rank";
      std::fprintf(stderr, "syncgrad-train: preempted (%s): stopped after step %lld, saved %s; exit status %d, "
                   "continue with --resume auto\n", why.c_str(), static_cast<long long>(p.step), p.checkpoint.c_str(),
                   syncgrad::distributed::kPreemptedExitStatus);
    }
    return syncgrad::distributed::kPreemptedExitStatus;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const syncgrad::Error& e) {
    std::fprintf(stderr, "syncgrad-train: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-train: unexpected error: %s\n", e.what());
    return 1;
  }
}
