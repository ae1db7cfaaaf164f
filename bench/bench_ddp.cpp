// syncgrad-bench ddp: DistributedDataParallel training throughput on synthetic Fashion-MNIST-shaped data, one
// compute thread per rank. Run it under the launcher for world size 1 and 2 and compare:
//   build/tools/syncgrad-launch --nproc-per-node 2 build/bench/syncgrad-bench ddp --model cnn --steps 40
// Options: --model mlp|cnn, --steps N (timed, after 5 warm-up steps), --batch B (per rank, 64),
// --bucket-cap-mb X (25), --first-bucket-mb X (1), --no-overlap (launch every bucket at the end of backward),
// --no-step-check (skip DDP's per-step agreement allgather), --comm-hook NAME, --join (train inside
// DistributedDataParallel::join: every rank runs the same steps, so this measures the guard's per-forward round).
// Rank 0 prints one line: model, world, samples/s (all ranks), ms/step, comm ms/step, exposed comm share.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "tools/cli_checks.h"
#include "bench/subcommands.h"
#include "autograd/ops/loss.h"
#include "distributed/ddp.h"
#include "models/models.h"
#include "optim/sgd.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

int bench_ddp_main(int argc, char** argv) {
  std::string model_name = "mlp", hook = "allreduce";
  int steps = 40;
  int64_t batch = 64;
  double bucket_cap_mb = 25, first_bucket_mb = 1;
  bool no_overlap = false, no_step_check = false, use_join = false;
  CLI::App app{"syncgrad-bench ddp: DDP training throughput (run under syncgrad-launch)"};
  app.add_option("--model", model_name, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--steps", steps, "timed steps after 5 warm-up steps")->check(cli::at_least(1));
  app.add_option("--batch", batch, "samples per rank and step")->check(cli::at_least(1));
  app.add_option("--bucket-cap-mb", bucket_cap_mb, "DDP bucket size (MiB)")->check(cli::real_above(0));
  app.add_option("--first-bucket-mb", first_bucket_mb, "DDP first bucket size (MiB)")->check(cli::real_above(0));
  app.add_option("--comm-hook", hook, "allreduce, fp16, bf16, powersgd or powersgd:R");
  app.add_flag("--no-overlap", no_overlap, "launch every bucket at the end of backward");
  app.add_flag("--no-step-check", no_step_check, "skip DDP's per-step agreement allgather");
  app.add_flag("--join", use_join, "train inside ddp.join() (one small allgather per forward)");
  CLI11_PARSE(app, argc, argv);
  try {
    const bool overlap = !no_overlap, step_check = !no_step_check;
    auto group = init_process_group();
    const int rank = group->rank(), world = group->size();
    Generator init(0);
    auto model = models::make_model(model_name, &init);
    DDPOptions options;
    options.bucket_cap_mb = bucket_cap_mb;
    options.first_bucket_mb = first_bucket_mb;
    options.overlap = overlap;
    options.check_step_agreement = step_check;
    options.comm_hook = make_comm_hook(hook);
    DistributedDataParallel ddp(model, group, options);
    optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
    Generator data(100 + rank);
    const Shape shape = model_name == "cnn" ? Shape{batch, 1, 28, 28} : Shape{batch, 784};
    Tensor x = randn(shape, {}, &data);
    Tensor y = randint(0, 10, {batch}, {.dtype = DType::i64}, &data);

    double comm = 0, exposed = 0;
    std::chrono::steady_clock::time_point start;
    const int warmup = 5;
    std::optional<Join> join;
    if (use_join) join.emplace(ddp);
    for (int step = 0; step < warmup + steps; ++step) {
      if (step == warmup) {
        group->barrier()->wait();
        start = std::chrono::steady_clock::now();
      }
      opt.zero_grad(false);
      cross_entropy(ddp(x), y).backward();
      opt.step();
      if (step >= warmup) {
        comm += ddp.last_stats().comm_seconds;
        exposed += ddp.last_stats().exposed_seconds;
      }
    }
    if (join) join->finish();
    group->barrier()->wait();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rank == 0) {
      std::printf("model %s world %d threads %d bucket_cap_mb %g overlap %d hook %s join %d: samples/s %.0f ms/step %.2f "
                  "comm_ms/step %.2f exposed_comm %.1f%%\n",
                  model_name.c_str(), world, get_num_threads(), bucket_cap_mb, overlap ? 1 : 0, hook.c_str(), use_join ? 1 : 0,
                  steps * batch * world / seconds, 1e3 * seconds / steps, 1e3 * comm / steps,
                  100.0 * exposed / seconds);
    }
    destroy_process_group();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench ddp: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
