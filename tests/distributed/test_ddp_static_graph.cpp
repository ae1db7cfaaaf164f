// DistributedDataParallel with reentrant activation checkpointing between 2 real processes: a GPT whose blocks
// are checkpointed gets, with and without static_graph, the averaged gradients of the run without checkpointing
// bit for bit; a parameter whose gradient arrives twice (used inside a checkpoint and outside) is a clear error
// without static_graph and works with it; a graph that changes under static_graph is an error naming the
// parameter.
#include <doctest/doctest.h>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "distributed/ddp.h"
#include "distributed/errors.h"
#include "models/gpt.h"
#include "nn/checkpoint.h"
#include "nn/linear.h"
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

bool identical(const Tensor& a, const Tensor& b) { return to_vector<double>(a) == to_vector<double>(b); }

// Every parameter's gradient of `a` equals `b`'s bit for bit; names the first that differs.
void expect_same_grads(const nn::Module& a, const nn::Module& b, const std::string& what) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    expect(pa[i].second.grad().defined() && identical(pa[i].second.grad(), pb[i].second.grad()),
           what + ": the gradients of " + pa[i].first + " differ");
  }
}

// A Linear used inside a checkpoint and again outside it: its gradient arrives twice per backward.
class SharedLayer : public nn::Module {
 public:
  explicit SharedLayer(Generator* gen)
      : nn::Module("SharedLayer"),
        shared(register_module("shared", std::make_shared<nn::Linear>(4, 4, true, gen))),
        head(register_module("head", std::make_shared<nn::Linear>(4, 2, true, gen))) {}
  Tensor forward(const Tensor& x) override {
    Tensor h = checkpointed ? nn::checkpoint(*shared, x) : shared->forward(x);
    if (use_twice) h = shared->forward(tanh(h));
    return head->forward(h);
  }
  std::shared_ptr<nn::Linear> shared, head;
  bool checkpointed = true;
  bool use_twice = true;
};

Tensor shard_of(int64_t step, int rank) {
  Generator gen(700 + step);
  return randn({4, 4}, {}, &gen).narrow(0, rank * 2, 2);
}

void backward_on(nn::Module& model, const Tensor& x) {
  Tensor y = model.forward(x);
  sum(mul(y, y)).backward();
}

}  // namespace

TEST_CASE("DDP: a GPT with checkpointed blocks gets the gradients of the plain run, with and without static_graph") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    const auto config = models::GPTConfig::parse("vocab_size=32,block_size=8,n_layer=2,n_head=2,n_embd=16,dropout=0.1");
    Generator g1(5), g2(5), g3(5);
    auto plain = std::make_shared<models::GPT>(config, &g1);
    auto static_checkpointed = std::make_shared<models::GPT>(config, &g2);
    auto checkpointed = std::make_shared<models::GPT>(config, &g3);
    static_checkpointed->activation_checkpointing = checkpointed->activation_checkpointing = true;
    DistributedDataParallel ddp_plain(plain), ddp_checkpointed(checkpointed);
    DistributedDataParallel ddp_static(static_checkpointed, DDPOptions{.static_graph = true});
    std::vector<std::pair<nn::Module*, std::shared_ptr<optim::SGD>>> runs;
    for (nn::Module* ddp : {static_cast<nn::Module*>(&ddp_plain), static_cast<nn::Module*>(&ddp_static),
                            static_cast<nn::Module*>(&ddp_checkpointed)}) {
      runs.emplace_back(ddp, std::make_shared<optim::SGD>(ddp->parameters(), optim::SGDOptions{.lr = 0.1}));
    }
    for (int64_t step = 0; step < 3; ++step) {
      Generator data(40 + step);
      Tensor tokens = randint(0, 32, {4, 8}, {.dtype = DType::i64}, &data).narrow(0, rank * 2, 2);
      Tensor targets = randint(0, 32, {4 * 8}, {.dtype = DType::i64}, &data).narrow(0, rank * 16, 16);
      for (auto& [ddp, opt] : runs) {
        opt->zero_grad();
        manual_seed(900 + 10 * step + rank);  // the same dropout masks in every run of this rank
        cross_entropy(ddp->forward(tokens).reshape({16, 32}), targets).backward();
      }
      expect_same_grads(*plain, *static_checkpointed, "step " + std::to_string(step) + " static_graph");
      expect_same_grads(*plain, *checkpointed, "step " + std::to_string(step) + " checkpointed");
      for (auto& [ddp, opt] : runs) opt->step();
    }
    report("3 steps identical");
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}

TEST_CASE("DDP: a gradient that arrives twice needs static_graph, which then equals the plain run") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    {
      Generator g(6);
      auto model = std::make_shared<SharedLayer>(&g);
      DistributedDataParallel ddp(model);
      try {
        backward_on(ddp, shard_of(0, rank));
        expect(false, "no error for a gradient arriving twice without static_graph");
      } catch (const AutogradError& e) {
        const std::string what = e.what();
        report(what);
        expect(what.find("shared.weight") != std::string::npos || what.find("shared.bias") != std::string::npos,
               "the error names no parameter: " + what);
        expect(what.find("static_graph") != std::string::npos, "the error does not suggest static_graph: " + what);
      }
    }
    Generator g1(7), g2(7);
    auto plain = std::make_shared<SharedLayer>(&g1), checkpointed = std::make_shared<SharedLayer>(&g2);
    plain->checkpointed = false;
    DistributedDataParallel ddp_plain(plain), ddp_static(checkpointed, DDPOptions{.static_graph = true});
    for (int64_t step = 0; step < 3; ++step) {
      for (nn::Module* ddp : {static_cast<nn::Module*>(&ddp_plain), static_cast<nn::Module*>(&ddp_static)}) {
        ddp->zero_grad();
        backward_on(*ddp, shard_of(step, rank));
      }
      expect_same_grads(*plain, *checkpointed, "step " + std::to_string(step));
    }
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}

TEST_CASE("DDP static_graph: a graph that changes after the first iteration is an error naming the parameter") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    for (bool fewer : {true, false}) {
      Generator g(8);
      auto model = std::make_shared<SharedLayer>(&g);
      model->use_twice = fewer;  // recorded: twice (then once), or once (then twice)
      DistributedDataParallel ddp(model, DDPOptions{.static_graph = true});
      backward_on(ddp, shard_of(0, rank));
      model->use_twice = !fewer;
      try {
        backward_on(ddp, shard_of(1, rank));
        expect(false, "no error for a changed graph under static_graph");
      } catch (const DistributedError& e) {
        const std::string what = e.what();
        report(what);
        expect(what.find("parameter shared.") != std::string::npos && what.find("graph changed") != std::string::npos,
               "unclear error: " + what);
      }
    }
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}
