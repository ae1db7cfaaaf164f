// DistributedDataParallel between real processes: 2 ranks with batch B end where one process with batch 2B
// ends (MLP, CNN; gradients copied or as bucket views; several bucket sizes), no_sync accumulation, unused
// parameters (the error and find_unused_parameters), the cross-rank model check, every comm hook trains,
// PowerSGD refuses buckets it cannot compress, and a dead rank ends the other's training with an error naming it.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <thread>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/views.h"
#include "distributed/ddp.h"
#include "distributed/errors.h"
#include "distributed/host_values.h"
#include "models/models.h"
#include "distributed/sync_batch_norm.h"
#include "nn/container.h"
#include "nn/linear.h"
#include "nn/normalization.h"
#include "optim/sgd.h"
#include "tensor/ops/factories.h"
#include "tests/check_error.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::report;
using syncgrad::test::expect_all_ok;
using syncgrad::test::run_job;

namespace {

struct Batch {
  Tensor x, y;
};

// Step s of the global data: 2B examples, identical on every rank.
Batch global_batch(const std::string& model, int64_t step, int64_t total) {
  Generator gen(1000 + step);
  Shape shape = model == "cnn" ? Shape{total, 1, 28, 28} : Shape{total, 784};
  return {randn(shape, {}, &gen), randint(0, 10, {total}, {.dtype = DType::i64}, &gen)};
}

double max_relative_difference(const nn::Module& a, const nn::Module& b) {
  double worst = 0;
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const double diff = max(abs(sub(pa[i].second, pb[i].second))).item<double>();
    const double scale = max(abs(pb[i].second)).item<double>() + 1e-12;
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// K steps of DDP with batch B per rank against one local model with batch 2B; returns the relative difference.
double ddp_vs_single(const std::string& name, int rank, DDPOptions options, int steps, int64_t batch) {
  Generator init(7);
  auto model = models::make_model(name, &init);
  Generator init_again(7);
  auto reference = models::make_model(name, &init_again);
  DistributedDataParallel ddp(model, options);
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD ref_opt(reference->parameters(), {.lr = 0.05, .momentum = 0.9});
  for (int step = 0; step < steps; ++step) {
    Batch all = global_batch(name, step, 2 * batch);
    opt.zero_grad(!options.gradient_as_bucket_view);
    Tensor loss = cross_entropy(ddp(all.x.narrow(0, rank * batch, batch)), all.y.narrow(0, rank * batch, batch));
    loss.backward();
    opt.step();
    ref_opt.zero_grad();
    cross_entropy((*reference)(all.x), all.y).backward();
    ref_opt.step();
  }
  return max_relative_difference(*model, *reference);
}

// fc1 -> relu -> fc2; `spare` is registered but used only when `use_spare`.
class WithSpare : public nn::Module {
 public:
  explicit WithSpare(bool use_spare) : nn::Module("WithSpare"), use_spare_(use_spare) {
    Generator gen(3);
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(8, 16, true, &gen));
    spare = register_module("spare", std::make_shared<nn::Linear>(16, 16, true, &gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 4, true, &gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu((*fc1)(x));
    if (use_spare_) h = (*spare)(h);
    return (*fc2)(h);
  }
  std::shared_ptr<nn::Linear> fc1, spare, fc2;
  bool use_spare_;
};

// Linear -> BatchNorm1d -> ReLU -> Linear.
class BNNet : public nn::Module {
 public:
  BNNet() : nn::Module("BNNet") {
    Generator gen(4);
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(12, 16, true, &gen));
    bn = register_module("bn", std::make_shared<nn::BatchNorm1d>(16));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 3, true, &gen));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(relu((*bn)((*fc1)(x)))); }
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::BatchNorm1d> bn;
};

}  // namespace

TEST_CASE("SyncBatchNorm: 2 ranks x batch B match one process with batch 2B, running statistics included") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    auto model = std::make_shared<BNNet>();
    auto reference = std::make_shared<BNNet>();
    expect(convert_sync_batchnorm(*model) == 1, "one BatchNorm converted");
    DistributedDataParallel ddp(model);
    optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
    optim::SGD ref_opt(reference->parameters(), {.lr = 0.1, .momentum = 0.9});
    const int64_t batch = 6;
    for (int step = 0; step < 4; ++step) {
      Generator gen(50 + step);
      Tensor x = randn({2 * batch, 12}, {}, &gen);
      Tensor y = randint(0, 3, {2 * batch}, {.dtype = DType::i64}, &gen);
      opt.zero_grad();
      cross_entropy(ddp(x.narrow(0, rank * batch, batch)), y.narrow(0, rank * batch, batch)).backward();
      opt.step();
      ref_opt.zero_grad();
      cross_entropy((*reference)(x), y).backward();
      ref_opt.step();
    }
    const double diff = max_relative_difference(*model, *reference);
    expect(diff < 1e-5, "parameters differ by " + std::to_string(diff));
    const double mean_diff = max(abs(sub(model->bn->running_mean, reference->bn->running_mean))).item<double>();
    const double var_diff = max(abs(sub(model->bn->running_var, reference->bn->running_var))).item<double>();
    expect(mean_diff < 1e-5 && var_diff < 1e-5,
           "running stats differ by " + std::to_string(mean_diff) + " / " + std::to_string(var_diff));
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("DDP with 2 ranks x batch B equals one process with batch 2B (MLP, CNN, copies and bucket views)") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    for (const std::string name : {"mlp", "cnn"}) {
      for (bool as_view : {false, true}) {
        DDPOptions options;
        options.gradient_as_bucket_view = as_view;
        options.bucket_cap_mb = 0.25;  // several buckets, so overlap and ordering are exercised
        options.first_bucket_mb = 0.05;
        const double diff = ddp_vs_single(name, rank, options, name == "mlp" ? 6 : 3, 16);
        report(name + (as_view ? " view " : " copy ") + std::to_string(diff));
        expect(diff < 1e-5, name + (as_view ? " (bucket views)" : " (copies)") + ": relative difference " +
                                std::to_string(diff));
      }
    }
    destroy_process_group();
  }, {.deadline_seconds = 240});
  expect_all_ok(outcomes);
}

TEST_CASE("buckets: reverse registration order at first, then the order gradients became ready") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator gen(1);
    auto model = models::make_model("mlp", &gen);
    DistributedDataParallel ddp(model, {.bucket_cap_mb = 0.2, .first_bucket_mb = 0.001});
    auto names = ddp.bucket_names();
    expect(names.size() >= 3, "several buckets for a 0.2 MB cap, got " + std::to_string(names.size()));
    expect(names.front().front() == "fc3.bias",
           "first bucket starts with the last parameter, got " + names.front().front());
    Tensor x = randn({4, 784}, {}, &gen);
    sum((*model)(x)).backward();  // the model itself (no DDP forward needed for the hooks)
    expect(ddp.synced_steps() == 1, "one synchronised step");
    expect(ddp.bucket_names().front().front() == "fc3.bias", "rebuilt buckets start with fc3.bias");
    expect(ddp.last_stats().buckets == names.size(), "stats count the buckets of the step");
    size_t gradient_bytes = 0;
    for (const Tensor& p : model->parameters()) gradient_bytes += p.nbytes();
    expect(ddp.last_stats().bytes == gradient_bytes, "stats count every gradient byte once");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("no_sync: k micro-batches accumulate locally and reduce once, equal to one big batch") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator a(5), b(5);
    auto model = models::make_model("mlp", &a);
    auto reference = models::make_model("mlp", &b);
    DistributedDataParallel ddp(model);
    const int64_t micro = 4, k = 3;
    Batch all = global_batch("mlp", 0, 2 * micro * k);
    // Rank r takes rows [r * micro * k, (r + 1) * micro * k) in k micro-batches.
    for (int64_t i = 0; i < k; ++i) {
      Tensor x = all.x.narrow(0, (rank * k + i) * micro, micro);
      Tensor y = all.y.narrow(0, (rank * k + i) * micro, micro);
      Tensor loss = div(cross_entropy(ddp(x), y), Scalar(double(k)));
      if (i + 1 < k) {
        auto guard = ddp.no_sync();
        loss.backward();
      } else {
        loss.backward();
      }
    }
    expect(ddp.synced_steps() == 1,
           "one allreduce step for k micro-batches, got " + std::to_string(ddp.synced_steps()));
    cross_entropy((*reference)(all.x), all.y).backward();
    auto mine = model->named_parameters(), ref = reference->named_parameters();
    for (size_t i = 0; i < mine.size(); ++i) {
      const double diff = max(abs(sub(mine[i].second.grad(), ref[i].second.grad()))).item<double>();
      const double scale = max(abs(ref[i].second.grad())).item<double>();
      expect(diff <= 1e-5 * scale + 1e-7, mine[i].first + " gradient differs by " + std::to_string(diff));
    }
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("unused parameters: a clear error without find_unused_parameters, correct gradients with it") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    {
      auto model = std::make_shared<WithSpare>(false);
      DistributedDataParallel ddp(model);
      try {
        sum(ddp(ones({2, 8}))).backward();
        report("no error");
      } catch (const DistributedError& e) {
        report(e.what());
      }
    }
    {
      // Only rank 1 uses `spare`: its gradient is averaged (rank 0 contributes zero).
      auto model = std::make_shared<WithSpare>(rank == 1);
      DistributedDataParallel ddp(model, {.find_unused_parameters = true});
      sum(ddp(ones({2, 8}))).backward();
      expect(model->spare->parameters()[0].grad().defined(), "spare.weight has a gradient (used by rank 1)");
      sum(ddp(ones({2, 8}))).backward();
    }
    {
      auto model = std::make_shared<WithSpare>(false);
      DistributedDataParallel ddp(model, {.find_unused_parameters = true});
      sum(ddp(ones({2, 8}))).backward();
      expect(!model->spare->parameters()[0].grad().defined(), "spare.weight unused everywhere keeps no gradient");
      expect(model->fc1->parameters()[0].grad().defined(), "fc1.weight has a gradient");
    }
    destroy_process_group();
  });
  expect_all_ok(outcomes);
  for (const auto& outcome : outcomes) {
    CHECK(outcome.report.find("parameter(s) spare.weight, spare.bias received no gradient") != std::string::npos);
    CHECK(outcome.report.find("find_unused_parameters = true") != std::string::npos);
  }
}

TEST_CASE("ranks that build different models fail at construction, naming the parameter") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator gen(1);
    auto model = models::make_model(rank == 0 ? "mlp" : "cnn", &gen);
    DistributedDataParallel ddp(model);
  });
  for (const auto& outcome : outcomes) {
    INFO(outcome.report);
    CHECK(outcome.exit_code == 1);
    CHECK(outcome.report.find("DistributedDataParallel: the ranks disagree: rank 1 has parameter conv1.weight "
                              "float32 [") != std::string::npos);
    CHECK(outcome.report.find("where rank 0 has parameter fc1.weight float32 [256, 784] (setting #0)") !=
          std::string::npos);
  }
}

TEST_CASE("every communication hook trains: the loss falls") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    for (const std::string hook : {"allreduce", "fp16", "bf16", "powersgd", "powersgd:2"}) {
      Generator gen(11);
      auto model = models::make_model("mlp", &gen);
      DDPOptions options;
      options.comm_hook = make_comm_hook(hook);
      if (hook.rfind("powersgd", 0) == 0)
        options.comm_hook =
            powersgd_hook({.matrix_approximation_rank = hook == "powersgd" ? 1 : 2, .start_iteration = 2});
      DistributedDataParallel ddp(model, options);
      optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
      // A fixed batch per rank: the loss on it must fall.
      Batch data = global_batch("mlp", 99, 64);
      Tensor x = data.x.narrow(0, rank * 32, 32), y = data.y.narrow(0, rank * 32, 32);
      double first = 0, last = 0;
      for (int step = 0; step < 25; ++step) {
        opt.zero_grad();
        Tensor loss = cross_entropy(ddp(x), y);
        loss.backward();
        opt.step();
        (step == 0 ? first : last) = loss.item<double>();
      }
      report(hook + " " + std::to_string(first) + " -> " + std::to_string(last));
      expect(last < 0.5 * first, hook + ": loss " + std::to_string(first) + " -> " + std::to_string(last));
      // The ranks apply the same averaged gradients, so they hold the same weights (PowerSGD's first compressed
      // step once left each rank with its own gradient).
      uint64_t hash = 1469598103934665603ull;
      for (const Tensor& p : model->parameters()) {
        const Tensor c = p.contiguous();
        const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
        for (size_t i = 0; i < c.nbytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
      }
      const auto hashes = PendingValues::allgather(*default_group_ptr(), {static_cast<int64_t>(hash)}).wait();
      expect(hashes[0][0] == hashes[1][0], hook + ": the ranks' weights differ");
    }
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}

TEST_CASE("PowerSGD refuses CUDA and float16/bfloat16 buckets instead of falling back to a plain allreduce") {
  using syncgrad::testing::check_error;
  auto powersgd = make_comm_hook("powersgd");
  powersgd->check_bucket(DType::f32, kCPU);
  powersgd->check_bucket(DType::f64, kCPU);
  check_error<DeviceError>([&] { powersgd->check_bucket(DType::f32, Device(DeviceType::kCUDA, 1)); },
                           {"powersgd:1", "cuda:1", "allreduce, fp16 or bf16 hook"});
  check_error<DTypeError>([&] { powersgd->check_bucket(DType::bf16, kCPU); },
                          {"powersgd:1", "bfloat16", "allreduce, fp16 or bf16 hook", "float32"});
  check_error<DTypeError>([&] { powersgd_hook({.matrix_approximation_rank = 2})->check_bucket(DType::f16, kCPU); },
                          {"powersgd:2", "float16"});
  for (const std::string other : {"allreduce", "fp16", "bf16"}) {
    make_comm_hook(other)->check_bucket(DType::bf16, Device(DeviceType::kCUDA, 0));
  }

  // Through DDP: at construction (the trainer's --comm-hook path) and in register_comm_hook.
  auto outcomes = run_job(2, [](int) {
    init_process_group(syncgrad::test::quick_init());
    Generator gen(5);
    auto model = std::make_shared<nn::Linear>(8, 4, true, &gen);
    model->to(DType::bf16);
    try {
      DistributedDataParallel ddp(model, {.comm_hook = make_comm_hook("powersgd")});
      report("construction: no error");
    } catch (const DTypeError& e) {
      report(std::string("construction: ") + e.what());
    }
    DistributedDataParallel ddp(model);
    try {
      ddp.register_comm_hook(powersgd_hook());
      report("register: no error");
    } catch (const DTypeError& e) {
      report(std::string("register: ") + e.what());
    }
    ddp.register_comm_hook(bf16_compress_hook());
    sum(ddp(ones({2, 8}, {.dtype = DType::bf16}))).backward();
    destroy_process_group();
  });
  expect_all_ok(outcomes);
  for (const auto& outcome : outcomes) {
    INFO(outcome.report);
    CHECK(outcome.report.find("construction: comm hook powersgd:1: PowerSGD compresses float32 or float64 buckets "
                              "only, got a bfloat16 bucket") != std::string::npos);
    CHECK(outcome.report.find("register: comm hook powersgd:1: PowerSGD compresses") != std::string::npos);
  }
}

TEST_CASE("a rank that dies during training ends the other's training with an error naming it") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init(std::chrono::milliseconds{60'000}));
    Generator gen(2);
    auto model = models::make_model("mlp", &gen);
    DistributedDataParallel ddp(model);
    optim::SGD opt(model->parameters(), {.lr = 0.01});
    Tensor x = randn({16, 784}, {}, &gen);
    Tensor y = randint(0, 10, {16}, {.dtype = DType::i64}, &gen);
    for (int step = 0;; ++step) {
      if (rank == 1 && step == 5) kill(getpid(), SIGKILL);
      opt.zero_grad();
      cross_entropy(ddp(x), y).backward();
      opt.step();
    }
  });
  CHECK(outcomes[1].exit_code == 128 + SIGKILL);
  INFO(outcomes[0].report);
  CHECK(outcomes[0].exit_code == 1);
  CHECK(outcomes[0].report.find("lost the connection to rank 1") != std::string::npos);
  CHECK(outcomes[0].seconds < 30);
}

TEST_CASE("a rank that skips a backward makes every rank fail with a DesyncError naming the steps") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator gen(2);
    auto model = models::make_model("mlp", &gen);
    DistributedDataParallel ddp(model);
    Tensor x = randn({4, 784}, {}, &gen);
    for (int step = 0; step < 4; ++step) {
      Tensor loss = sum(ddp(x));
      if (rank == 1 && step == 1) continue;  // forgot this backward
      loss.backward();
    }
  });
  for (const auto& outcome : outcomes) {
    INFO(outcome.report);
    CHECK(outcome.exit_code == 1);
    CHECK(outcome.report.find("ranks are out of step") != std::string::npos);
    CHECK(outcome.report.find("rank 0 after 2, rank 1 after 3") != std::string::npos);
  }
}

TEST_CASE("a rank that stops after fewer steps ends the other's next step with an error naming it") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator gen(2);
    auto model = models::make_model("mlp", &gen);
    DistributedDataParallel ddp(model);
    Tensor x = randn({4, 784}, {}, &gen);
    for (int step = 0; step < (rank == 0 ? 4 : 3); ++step) sum(ddp(x)).backward();
    if (rank == 1) {
      // Its state dict saved through the wrapper has "module." keys; load_model_state still takes it.
      auto fresh = models::make_model("mlp", &gen);
      load_model_state(*fresh, ddp.state_dict());
      expect(max(abs(sub(fresh->parameters()[0], model->parameters()[0]))).item<double>() == 0, "state loaded");
    }
    destroy_process_group();
  });
  CHECK(outcomes[1].exit_code == 0);
  INFO(outcomes[0].report);
  CHECK(outcomes[0].exit_code == 1);
  CHECK(outcomes[0].report.find("DistributedDataParallel step 3") != std::string::npos);
  CHECK(outcomes[0].report.find("rank 1") != std::string::npos);
  CHECK(outcomes[0].seconds < 25);
}
