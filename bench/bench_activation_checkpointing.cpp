// syncgrad-bench activation-checkpointing: one GPT training step's peak memory and time with or without
// activation checkpointing (nn/checkpoint.h: each transformer block recomputed in backward). Alone it trains in
// one process; under syncgrad-launch every rank trains under DistributedDataParallel (static_graph when
// checkpointing), e.g.
//   build/tools/syncgrad-launch --nproc-per-node 2 build/bench/syncgrad-bench activation-checkpointing --checkpointing
// Memory is the allocator's own accounting (tensor/memory_tag.h) of what forward and backward allocate on the
// rank's thread: "activation peak" is its high-water mark during a step's forward and backward above what was
// allocated before the forward. The parameters, their gradients (zeroed in place, kept from the warm-up
// step), the optimizer state and DDP's buckets are all allocated before, so what it counts is the activations
// and backward's temporaries. Time is the median step (forward, backward, AdamW) after the warm-up steps, in
// wall-clock time and in the rank thread's CPU time (steadier on a loaded machine); the memory is the largest
// over the timed steps. Each rank prints one line. Options: --model-config (GPT, default
// 12 layers x 768, context 128), --batch (sequences per rank, 8), --steps (timed, 3), --warmup (at least 1, 1),
// --checkpointing.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops/loss.h"
#include "bench/subcommands.h"
#include "distributed/ddp.h"
#include "models/gpt.h"
#include "optim/adam.h"
#include "tensor/memory_tag.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"
#include "tools/cli_checks.h"

using namespace syncgrad;

namespace {

constexpr int kStepTag = 1;
constexpr double kMiB = 1024.0 * 1024.0;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int bench_activation_checkpointing_main(int argc, char** argv) {
  std::string config_text = "n_layer=12,n_embd=768,n_head=12,block_size=128";
  int64_t batch = 8;
  int steps = 3, warmup = 1;
  bool checkpointing = false;
  CLI::App app{"syncgrad-bench activation-checkpointing: a GPT step's peak memory and time, checkpointed or not"};
  app.add_option("--model-config", config_text, "GPT sizes (syncgrad-train's --model-config)")->capture_default_str();
  app.add_option("--batch", batch, "sequences per rank and step")->check(cli::at_least(1))->capture_default_str();
  app.add_option("--steps", steps, "timed steps")->check(cli::at_least(1))->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps first (they allocate the gradients)")
      ->check(cli::at_least(1))
      ->capture_default_str();
  app.add_flag("--checkpointing", checkpointing, "recompute each transformer block's activations in backward");
  CLI11_PARSE(app, argc, argv);
  try {
    const models::GPTConfig config = models::GPTConfig::parse(config_text);
    const bool distributed_run = std::getenv("WORLD_SIZE") != nullptr;
    std::shared_ptr<distributed::ProcessGroup> group;
    if (distributed_run) group = distributed::init_process_group();
    const int rank = group ? group->rank() : 0, world = group ? group->size() : 1;
    Generator init(0);
    auto model = std::make_shared<models::GPT>(config, &init);
    model->activation_checkpointing = checkpointing;
    std::shared_ptr<nn::Module> trained = model;
    if (group) {
      distributed::DDPOptions options;
      options.static_graph = checkpointing;
      trained = std::make_shared<distributed::DistributedDataParallel>(model, group, options);
    }
    optim::AdamW opt(model->parameters(), {.lr = 1e-4, .weight_decay = 0.0});
    size_t param_bytes = 0;
    for (const Tensor& p : model->parameters()) param_bytes += p.nbytes();

    Generator data(100 + static_cast<uint64_t>(rank));
    const int64_t T = config.block_size;
    std::vector<double> step_seconds, step_cpu_seconds;
    size_t activation_peak = 0;
    for (int step = 0; step < warmup + steps; ++step) {
      Tensor tokens = randint(0, config.vocab_size, {batch, T}, {.dtype = DType::i64}, &data);
      Tensor targets = randint(0, config.vocab_size, {batch * T}, {.dtype = DType::i64}, &data);
      opt.zero_grad(false);  // in place: the gradients stay allocated, outside the measured memory
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = thread_cpu_seconds();
      {
        MemoryTagGuard tag(kStepTag);
        const size_t before = memory_tag_stats(kStepTag).allocated_bytes;
        reset_memory_tag_peaks();
        cross_entropy(trained->forward(tokens).reshape({batch * T, config.vocab_size}), targets).backward();
        if (step >= warmup) {
          activation_peak = std::max(activation_peak, memory_tag_stats(kStepTag).peak_allocated_bytes - before);
        }
      }
      opt.step();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (step >= warmup) {
        step_seconds.push_back(seconds);
        step_cpu_seconds.push_back(thread_cpu_seconds() - cpu_start);
      }
    }
    std::printf("rank %d world %d checkpointing %d threads %d params_mib %.1f activations_mib %.1f ms_per_step %.0f "
                "cpu_ms_per_step %.0f\n",
                rank, world, checkpointing ? 1 : 0, get_num_threads(), static_cast<double>(param_bytes) / kMiB,
                static_cast<double>(activation_peak) / kMiB, 1e3 * median_of(step_seconds),
                1e3 * median_of(step_cpu_seconds));
    std::fflush(stdout);
    if (group) distributed::destroy_process_group();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench activation-checkpointing: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
