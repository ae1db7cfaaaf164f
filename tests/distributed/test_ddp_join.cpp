// DistributedDataParallel::join between real processes: ranks with 10 and 13 batches (and three ranks with three
// counts) finish and end where one process ends that sums each step's batches of the ranks still training,
// divided by the initial world size or by the ranks still training (no_sync accumulation and the fp16 hook
// too); SyncBatchNorm and PowerSGD are refused or stop every rank, static_graph and gradient_sharding refused; enable = false does nothing; a rank that
// leaves the guard with an error does not leave the others hanging; a model with several inputs trains under
// DDP with find_unused_parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "distributed/ddp.h"
#include "distributed/errors.h"
#include "distributed/sync_batch_norm.h"
#include "nn/linear.h"
#include "nn/normalization.h"
#include "optim/sgd.h"
#include "tensor/ops/factories.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::report;
using syncgrad::test::run_job;

namespace {

// forward(x) = head(relu(a(x))); forward_many({x, extra}) adds relu(b(extra)) before the head. `spare` never
// takes part, so DDP needs find_unused_parameters (and b is unused in a single-input forward).
class TwoInputs : public nn::Module {
 public:
  explicit TwoInputs(bool with_norm = false) : nn::Module("TwoInputs") {
    Generator gen(11);
    a = register_module("a", std::make_shared<nn::Linear>(8, 16, true, &gen));
    b = register_module("b", std::make_shared<nn::Linear>(6, 16, true, &gen));
    spare = register_module("spare", std::make_shared<nn::Linear>(16, 16, true, &gen));
    head = register_module("head", std::make_shared<nn::Linear>(16, 4, true, &gen));
    if (with_norm) norm = register_module("norm", std::make_shared<nn::BatchNorm1d>(16));
  }
  Tensor forward(const Tensor& x) override { return (*head)(hidden(x)); }
  Tensor forward_many(const std::vector<Tensor>& inputs) override {
    expect(inputs.size() == 2, "TwoInputs takes 2 inputs");
    return (*head)(add(hidden(inputs[0]), relu((*b)(inputs[1]))));
  }
  std::shared_ptr<nn::Linear> a, b, spare, head;
  std::shared_ptr<nn::BatchNorm1d> norm;

 private:
  Tensor hidden(const Tensor& x) {
    Tensor h = (*a)(x);
    return relu(norm ? (*norm)(h) : h);
  }
};

struct Batch {
  Tensor x, extra, y;
};

// Batch `step` of `rank`: the same on every process.
Batch batch_of(int rank, int step) {
  Generator gen(1000 * rank + step);
  Tensor x = randn({4, 8}, {}, &gen);
  Tensor extra = randn({4, 6}, {}, &gen);
  return {x, extra, randn({4, 4}, {}, &gen)};
}

Tensor output(nn::Module& model, const Batch& batch, bool two_inputs) {
  return two_inputs ? model({batch.x, batch.extra}) : model(batch.x);
}

double max_relative_difference(const nn::Module& a, const nn::Module& b) {
  double worst = 0;
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const double diff = max(abs(sub(pa[i].second, pb[i].second))).item<double>();
    worst = std::max(worst, diff / (max(abs(pb[i].second)).item<double>() + 1e-12));
  }
  return worst;
}

// Whether every rank holds exactly this rank's parameters and buffers.
bool identical_on_all_ranks(ProcessGroup& group, const nn::Module& model) {
  nn::StateDict state = model.state_dict();
  for (const auto& [name, t] : state) {
    if (!is_floating(t.dtype())) continue;
    Tensor high = t.clone(), low = t.clone();
    group.allreduce(high, ReduceOp::kMax)->wait();
    group.allreduce(low, ReduceOp::kMin)->wait();
    if (max(abs(sub(high, low))).item<double>() != 0) return false;
  }
  return true;
}

struct UnevenRun {
  double difference = 0;  // from the single-process reference
  int64_t shadowed = 0;
  int source = -1;
};

// Rank `rank` trains on batches[rank] batches under join; the reference sums, at each step, the losses of the
// ranks that still have a batch, divided as `options` says.
UnevenRun train_uneven(int rank, const std::vector<int>& batches, JoinOptions options, bool two_inputs) {
  auto model = std::make_shared<TwoInputs>();
  auto reference = std::make_shared<TwoInputs>();
  // Tiny buckets: several of them, rebuilt in gradient-ready order after the first step.
  DistributedDataParallel ddp(model, {.bucket_cap_mb = 0.0005, .first_bucket_mb = 0.0002,
                                      .find_unused_parameters = true});
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD ref_opt(reference->parameters(), {.lr = 0.05, .momentum = 0.9});
  UnevenRun run;
  {
    Join join = ddp.join(options);
    for (int step = 0; step < batches[rank]; ++step) {
      const Batch batch = batch_of(rank, step);
      opt.zero_grad();
      mse_loss(output(ddp, batch, two_inputs), batch.y).backward();
      opt.step();
    }
    join.finish();
    run.shadowed = join.shadowed_steps();
    run.source = join.source_rank();
  }
  expect(ddp.bucket_names().size() > 2, "several buckets");
  const int world = static_cast<int>(batches.size());
  for (int step = 0; step < *std::max_element(batches.begin(), batches.end()); ++step) {
    int training = 0;
    for (int r = 0; r < world; ++r) training += step < batches[r] ? 1 : 0;
    ref_opt.zero_grad();
    Tensor loss;
    for (int r = 0; r < world; ++r) {
      if (step >= batches[r]) continue;
      const Batch batch = batch_of(r, step);
      Tensor term = mse_loss(output(*reference, batch, two_inputs), batch.y);
      loss = loss.defined() ? add(loss, term) : term;
    }
    div(loss, Scalar(double(options.divide_by_initial_world_size ? world : training))).backward();
    ref_opt.step();
  }
  run.difference = max_relative_difference(*model, *reference);
  expect(identical_on_all_ranks(ddp.process_group(), *model), "the replicas are identical after the join");
  return run;
}

}  // namespace

TEST_CASE("join: ranks with 10 and 13 batches finish and match the reference (both divisions, one or two inputs)") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    const std::vector<int> batches = {10, 13};
    for (bool initial : {true, false}) {
      for (bool two_inputs : {false, true}) {
        const UnevenRun run = train_uneven(rank, batches, {.divide_by_initial_world_size = initial}, two_inputs);
        const std::string what = std::string(initial ? "initial world size" : "ranks still training") +
                                 (two_inputs ? ", two inputs" : ", one input");
        expect(run.difference < 1e-5, what + ": parameters differ from the reference by " +
                                          std::to_string(run.difference));
        expect(run.shadowed == (rank == 0 ? 3 : 0), what + ": shadowed " + std::to_string(run.shadowed));
        expect(run.source == 1, what + ": parameters taken from rank " + std::to_string(run.source));
      }
    }
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("join: three ranks with 4, 9 and 6 batches (and 0, 3, 2), buffers broadcast from a rank still training, bf16 hook") {
  auto outcomes = run_job(3, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    const std::vector<int> batches = {4, 9, 6};
    expect(train_uneven(rank, batches, {}, true).difference < 1e-5, "matches the reference");
    const UnevenRun none_first = train_uneven(rank, {0, 3, 2}, {.divide_by_initial_world_size = false}, false);
    expect(none_first.difference < 1e-5, "a rank without any batch: matches the reference");
    expect(none_first.shadowed == std::vector<int>{3, 0, 1}[rank], "a rank without any batch shadows every step");
    auto model = std::make_shared<TwoInputs>(true);
    DistributedDataParallel ddp(model, {.find_unused_parameters = true, .comm_hook = bf16_compress_hook()});
    optim::SGD opt(model->parameters(), {.lr = 0.05});
    {
      Join join = ddp.join();
      for (int step = 0; step < batches[rank]; ++step) {
        const Batch batch = batch_of(rank, step);
        opt.zero_grad();
        mse_loss(ddp({batch.x, batch.extra}), batch.y).backward();
        opt.step();
      }
    }
    expect(identical_on_all_ranks(ddp.process_group(), *model), "parameters and running statistics identical");
    expect(model->norm->num_batches_tracked.item<int64_t>() == 9, "the running statistics of the longest rank");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("join: no_sync accumulation (2 and 3 steps of 3 micro-batches) and the fp16 hook match the reference") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    const std::vector<int> steps = {2, 3};
    const int micro = 3;
    auto model = std::make_shared<TwoInputs>();
    auto reference = std::make_shared<TwoInputs>();
    DistributedDataParallel ddp(model, {.gradient_as_bucket_view = true, .find_unused_parameters = true,
                                        .comm_hook = fp16_compress_hook()});
    optim::SGD opt(model->parameters(), {.lr = 0.05});
    optim::SGD ref_opt(reference->parameters(), {.lr = 0.05});
    {
      Join join = ddp.join();
      for (int step = 0; step < steps[rank]; ++step) {
        opt.zero_grad(false);
        for (int m = 0; m < micro; ++m) {
          const Batch batch = batch_of(rank, step * micro + m);
          if (m + 1 < micro) {
            auto local_only = ddp.no_sync();
            mse_loss(ddp(batch.x), batch.y).backward();
          } else {
            mse_loss(ddp(batch.x), batch.y).backward();
          }
        }
        opt.step();
      }
      join.finish();
      expect(join.shadowed_steps() == (rank == 0 ? micro : 0), "rank 0 took part in rank 1's 3 micro-batches");
    }
    for (int step = 0; step < 3; ++step) {
      ref_opt.zero_grad();
      for (int r = 0; r < 2; ++r) {
        if (step >= steps[r]) continue;
        for (int m = 0; m < micro; ++m) {
          const Batch batch = batch_of(r, step * micro + m);
          div(mse_loss((*reference)(batch.x), batch.y), Scalar(2.0)).backward();
        }
      }
      ref_opt.step();
    }
    // fp16 on the wire: the gradients carry about 3 significant digits.
    const double diff = max_relative_difference(*model, *reference);
    expect(diff < 2e-3, "parameters differ from the reference by " + std::to_string(diff));
    expect(identical_on_all_ranks(ddp.process_group(), *model), "the replicas are identical after the join");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("join: SyncBatchNorm, PowerSGD, static_graph and gradient_sharding are refused; throw_on_early_termination stops every rank") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    auto model = std::make_shared<TwoInputs>(true);
    convert_sync_batchnorm(*model);
    DistributedDataParallel ddp(model, {.find_unused_parameters = true});
    try {
      Join join = ddp.join();
      report("no error");
    } catch (const ValueError& e) {
      report(e.what());
    }
    try {
      Join join = ddp.join({.throw_on_early_termination = true});
      for (int step = 0; step < (rank == 0 ? 3 : 5); ++step) {
        const Batch batch = batch_of(rank, step);
        mse_loss(ddp(batch.x), batch.y).backward();
      }
      join.finish();
      report("no early termination");
    } catch (const EarlyTerminationError& e) {
      report(std::string("stopped: ") + e.what());
    }
    ddp.register_comm_hook(powersgd_hook());
    try {
      Join join = ddp.join({.throw_on_early_termination = true});
      report("powersgd accepted");
    } catch (const ValueError& e) {
      report(e.what());
    }
    for (const bool static_graph : {true, false}) {
      DistributedDataParallel other(std::make_shared<TwoInputs>(),
                                    {.find_unused_parameters = !static_graph,
                                     .static_graph = static_graph,
                                     .gradient_sharding = !static_graph});
      try {
        Join join = other.join();
        report(static_graph ? "static_graph accepted" : "gradient_sharding accepted");
      } catch (const ValueError& e) {
        report(std::string(static_graph ? "static_graph: " : "gradient_sharding: ") + e.what());
      }
    }
    destroy_process_group();
  });
  expect_all_ok(outcomes);
  for (const auto& outcome : outcomes) {
    INFO(outcome.report);
    CHECK(outcome.report.find("SyncBatchNorm layer(s) (norm)") != std::string::npos);
    CHECK(outcome.report.find("stopped: DistributedDataParallel::join") != std::string::npos);
    CHECK(outcome.report.find("rank(s) 0 ran out of inputs while rank(s) 1 still train") != std::string::npos);
    CHECK(outcome.report.find("comm hook powersgd:1 cannot run under DistributedDataParallel::join()") !=
          std::string::npos);
    for (const char* option : {"static_graph: ", "gradient_sharding: "}) {
      CHECK(outcome.report.find(std::string(option) + "DistributedDataParallel::join: not supported with "
                                "static_graph or gradient_sharding") != std::string::npos);
    }
  }
}

TEST_CASE("join: enable = false does nothing; a rank that leaves the guard with an error fails the others' next step") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init(std::chrono::milliseconds{3'000}));
    auto model = std::make_shared<TwoInputs>();
    DistributedDataParallel ddp(model, {.find_unused_parameters = true});
    {
      Join join = ddp.join({.enable = false});
      for (int step = 0; step < 2; ++step) mse_loss(ddp(batch_of(rank, step).x), batch_of(rank, step).y).backward();
      join.finish();
      expect(join.shadowed_steps() == 0 && join.source_rank() == -1, "a disabled join shadows nothing");
    }
    try {
      Join join = ddp.join();
      for (int step = 0; step < 4; ++step) {
        if (rank == 0 && step == 2) throw std::runtime_error("bad batch");
        mse_loss(ddp(batch_of(rank, step).x), batch_of(rank, step).y).backward();
      }
    } catch (const DistributedError& e) {
      report(std::string("failed: ") + e.what());
    } catch (const std::runtime_error& e) {
      report(std::string("left the guard: ") + e.what());
      std::this_thread::sleep_for(std::chrono::seconds(5));  // stays alive: rank 1 fails by its timeout
    }
  });
  expect_all_ok(outcomes);
  INFO(outcomes[0].report);
  INFO(outcomes[1].report);
  CHECK(outcomes[0].report.find("left the guard: bad batch") != std::string::npos);
  CHECK(outcomes[1].report.find("failed: DistributedDataParallel::join (rank 1, forward 3 inside the guard)") !=
        std::string::npos);
  CHECK(outcomes[1].report.find("a rank left the join guard with an error") != std::string::npos);
}

TEST_CASE("Module::forward_many: one input runs forward, more are refused naming the module") {
  nn::Linear linear(3, 2);
  Tensor x = ones({1, 3});
  CHECK(max(abs(sub(linear({x}), linear(x)))).item<double>() == 0);
  CHECK_THROWS_WITH_AS(linear({x, x}), doctest::Contains("Linear.forward_many: this module takes one input, got 2"),
                       ValueError);
}
