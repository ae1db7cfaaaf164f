// Mixed precision under DistributedDataParallel between real processes: 2 ranks running the forward under
// autocast (bf16 and fp16) with a GradScaler end where one process ends that runs both ranks' halves of each
// batch as two micro-batches (the same lower-precision products, gradients averaged), and an overflow on one
// rank only makes both ranks skip the same step and back off to the same scale (the gradients are averaged
// before the scaler looks at them).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "autograd/autocast.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "distributed/ddp.h"
#include "models/models.h"
#include "optim/grad_scaler.h"
#include "optim/sgd.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::report;
using syncgrad::test::run_job;

namespace {

struct Batch {
  Tensor x, y;
};

Batch global_batch(int64_t step, int64_t total) {
  Generator gen(500 + step);
  return {randn({total, 1, 28, 28}, {}, &gen), randint(0, 10, {total}, {.dtype = DType::i64}, &gen)};
}

// One optimizer step on `micro_batches` (their losses averaged) with the forward under autocast(dtype).
bool amp_step(nn::Module& forward, optim::Optimizer& opt, optim::GradScaler& scaler, DType dtype,
              const std::vector<Batch>& micro_batches) {
  opt.zero_grad();
  for (const Batch& b : micro_batches) {
    Tensor loss;
    {
      auto amp = autocast(DeviceType::kCPU, dtype);
      loss = cross_entropy(forward(b.x), b.y);
    }
    scaler.scale(div(loss, static_cast<double>(micro_batches.size()))).backward();
  }
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

double squared_norm(const Tensor& t) {
  Tensor d = t.to(DType::f64);
  return sum(mul(d, d)).item<double>();
}

// ||(a - start) - (b - start)|| / ||b - start|| over all parameters: how far the two runs' updates differ.
double update_difference(const nn::Module& a, const nn::Module& b, const std::vector<Tensor>& start) {
  auto pa = a.parameters(), pb = b.parameters();
  double diff = 0, update = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    diff += squared_norm(sub(pa[i], pb[i]));
    update += squared_norm(sub(pb[i], start[i]));
  }
  return std::sqrt(diff / update);
}

}  // namespace

TEST_CASE("DDP + autocast + GradScaler: 2 ranks x batch B equal one process with 2 micro-batches of B") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    for (DType dtype : {DType::bf16, DType::f16}) {
      Generator init(3), init_again(3);
      auto model = models::make_model("cnn", &init);
      auto reference = models::make_model("cnn", &init_again);
      std::vector<Tensor> start;
      for (const Tensor& p : reference->parameters()) start.push_back(p.detach().clone());
      DistributedDataParallel ddp(model);
      optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
      optim::SGD ref_opt(reference->parameters(), {.lr = 0.05, .momentum = 0.9});
      optim::GradScaler scaler({.enabled = dtype == DType::f16}), ref_scaler({.enabled = dtype == DType::f16});
      const int64_t batch = 8;
      for (int step = 0; step < 4; ++step) {
        Batch all = global_batch(step, 2 * batch);
        auto half = [&](int r) { return Batch{all.x.narrow(0, r * batch, batch), all.y.narrow(0, r * batch, batch)}; };
        amp_step(ddp, opt, scaler, dtype, {half(rank)});
        amp_step(*reference, ref_opt, ref_scaler, dtype, {half(0), half(1)});
      }
      // Only the float32 summation order differs (a lower-precision run on the whole batch of 2B would differ
      // by the rounding of its products: ~8% of the update here).
      const double diff = update_difference(*model, *reference, start);
      report(std::string(dtype_name(dtype)) + " " + std::to_string(diff));
      expect(diff < 1e-4, std::string(dtype_name(dtype)) + ": relative difference " + std::to_string(diff));
      expect(scaler.get_scale() == ref_scaler.get_scale(), "the scales differ");
    }
    destroy_process_group();
  }, {.deadline_seconds = 180});
  expect_all_ok(outcomes);
}

TEST_CASE("DDP + GradScaler: an overflow on one rank makes every rank skip the step and back off alike") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator init(4);
    auto model = models::make_model("mlp", &init);
    DistributedDataParallel ddp(model);
    optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
    optim::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 2});
    std::vector<int> stepped;
    for (int step = 0; step < 5; ++step) {
      Batch b = global_batch(step, 16);
      Tensor x = b.x.narrow(0, rank * 8, 8);
      // Step 2 on rank 1 only: an input that overflows float16 in the first layer.
      if (step == 2 && rank == 1) {
        x = x.clone();
        raw::fill_(x.narrow(0, 0, 1), 1e30);
      }
      stepped.push_back(amp_step(ddp, opt, scaler, DType::f16, {{x, b.y.narrow(0, rank * 8, 8)}}) ? 1 : 0);
    }
    std::string pattern;
    for (int s : stepped) pattern += std::to_string(s);
    report("stepped " + pattern + " scale " + std::to_string(scaler.get_scale()) + " skipped " +
           std::to_string(scaler.skipped_steps()));
    expect(pattern == "11011", "steps taken " + pattern + ", expected 11011 on every rank");
    // 1024 -> 2048 after two clean steps -> 1024 at the overflow -> 2048 after two more.
    expect(scaler.get_scale() == 2048.0, "scale " + std::to_string(scaler.get_scale()));
    expect(scaler.skipped_steps() == 1, "skipped " + std::to_string(scaler.skipped_steps()));
    // Same weights on both ranks: compare a checksum through an allreduce of the difference.
    Tensor checksum = zeros({1}, {.dtype = DType::f64});
    for (const Tensor& p : model->parameters()) raw::copy_(checksum, add(checksum, sum(p.to(DType::f64))));
    Tensor gathered = checksum.clone();
    ProcessGroup& group = ddp.process_group();
    group.allreduce(gathered)->wait();
    expect(std::abs(gathered.item<double>() - 2 * checksum.item<double>()) < 1e-9 * std::abs(gathered.item<double>()),
           "the ranks' weights differ");
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}
