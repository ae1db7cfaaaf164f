// syncgrad-bench-ddp: DistributedDataParallel training throughput on synthetic Fashion-MNIST-shaped data, one
// compute thread per rank. Run it under the launcher for world size 1 and 2 and compare:
//   build/tools/syncgrad-launch --nproc-per-node 2 build/bench/syncgrad-bench-ddp --model cnn --steps 40
// Options: --model mlp|cnn, --steps N (timed, after 5 warm-up steps), --batch B (per rank, 64),
// --bucket-cap-mb X (25), --first-bucket-mb X (1), --no-overlap (launch every bucket at the end of backward),
// --no-step-check (skip DDP's per-step agreement allgather), --comm-hook NAME.
// Rank 0 prints one line: model, world, samples/s (all ranks), ms/step, comm ms/step, exposed comm share.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "autograd/ops/loss.h"
#include "distributed/ddp.h"
#include "models/models.h"
#include "optim/sgd.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

int main(int argc, char** argv) {
  std::string model_name = "mlp", hook = "allreduce";
  int steps = 40;
  int64_t batch = 64;
  double bucket_cap_mb = 25, first_bucket_mb = 1;
  bool overlap = true, step_check = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--model" && has_value) model_name = argv[++i];
    else if (arg == "--steps" && has_value) steps = std::atoi(argv[++i]);
    else if (arg == "--batch" && has_value) batch = std::atoll(argv[++i]);
    else if (arg == "--bucket-cap-mb" && has_value) bucket_cap_mb = std::atof(argv[++i]);
    else if (arg == "--comm-hook" && has_value) hook = argv[++i];
    else if (arg == "--first-bucket-mb" && has_value) first_bucket_mb = std::atof(argv[++i]);
    else if (arg == "--no-overlap") overlap = false;
    else if (arg == "--no-step-check") step_check = false;
    else {
      std::fprintf(stderr, "syncgrad-bench-ddp: unknown argument %s (see the top of bench/bench_ddp.cpp)\n", argv[i]);
      return 2;
    }
  }
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
  group->barrier()->wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank == 0) {
    std::printf("model %s world %d threads %d bucket_cap_mb %g overlap %d hook %s: samples/s %.0f ms/step %.2f "
                "comm_ms/step %.2f exposed_comm %.1f%%\n",
                model_name.c_str(), world, get_num_threads(), bucket_cap_mb, overlap ? 1 : 0, hook.c_str(),
                steps * batch * world / seconds, 1e3 * seconds / steps, 1e3 * comm / steps,
                100.0 * exposed / seconds);
  }
  destroy_process_group();
  return 0;
}
