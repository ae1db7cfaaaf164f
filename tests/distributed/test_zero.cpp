// ZeroRedundancyOptimizer between real processes (2 and 3 ranks): ZeRO-1 (DDP allreduce + sharded step) and
// ZeRO-2 (DDP gradient_sharding: reduce-scattered buckets) give the same losses as DDP with the plain optimizer
// for 50 steps of the MLP and a small GPT with AdamW, keep 1/W of the optimizer-state bytes (memory tags), also
// with SGD momentum and Adam; GradScaler skips agree across ranks; clipping takes the global norm; the state
// consolidated at one world size loads at another and continues exactly; bad inputs get clear errors.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <sstream>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/views.h"
#include "distributed/ddp.h"
#include "distributed/zero_checkpoint.h"
#include "distributed/zero_redundancy_optimizer.h"
#include "models/gpt.h"
#include "models/models.h"
#include "optim/adam.h"
#include "optim/clip_grad.h"
#include "optim/grad_scaler.h"
#include "optim/optimizer_state_io.h"
#include "optim/sgd.h"
#include "tensor/allocator.h"
#include "tensor/io/safetensors.h"
#include "tensor/memory_tag.h"
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

enum class Mode { kDdp, kZero1, kZero2 };
const char* mode_name(Mode m) { return m == Mode::kDdp ? "ddp" : m == Mode::kZero1 ? "zero1" : "zero2"; }

enum class Opt { kSgd, kAdam, kAdamW };

std::unique_ptr<optim::Optimizer> make_plain(Opt kind, std::vector<Tensor> params) {
  switch (kind) {
    case Opt::kSgd:
      return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    case Opt::kAdam:
      return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = 1e-3, .weight_decay = 1e-4});
    case Opt::kAdamW:
      return std::make_unique<optim::AdamW>(std::move(params), optim::AdamWOptions{.lr = 1e-3});
  }
  return nullptr;
}

// Small buckets so that the models have several (the GPT's are split among its blocks).
DDPOptions ddp_options(Mode mode) {
  DDPOptions o;
  o.bucket_cap_mb = 0.25;
  o.first_bucket_mb = 0.05;
  o.gradient_sharding = mode == Mode::kZero2;
  return o;
}

struct Setup {
  std::shared_ptr<nn::Module> model;
  std::shared_ptr<DistributedDataParallel> ddp;
  std::unique_ptr<optim::Optimizer> opt;
  optim::ZeroRedundancyOptimizer* zero = nullptr;
};

Setup make_setup(const std::function<std::shared_ptr<nn::Module>()>& make_model, Mode mode, Opt kind) {
  Setup s;
  s.model = make_model();
  s.ddp = std::make_shared<DistributedDataParallel>(s.model, default_group_ptr(), ddp_options(mode));
  if (mode == Mode::kDdp) {
    s.opt = make_plain(kind, s.model->parameters());
  } else {
    auto zero = std::make_unique<optim::ZeroRedundancyOptimizer>(
        s.model->parameters(), default_group_ptr(),
        [kind](std::vector<Tensor> shards) { return make_plain(kind, std::move(shards)); },
        optim::ZeroOptions{.first_bucket_mb = 0.05, .bucket_cap_mb = 0.25});
    if (mode == Mode::kZero2) zero->use_gradient_shards(*s.ddp);
    s.zero = zero.get();
    s.opt = std::move(zero);
  }
  return s;
}

// Per-step losses of this rank, and the optimizer-state bytes it holds afterwards (allocations under a tag
// around step() that were not freed).
struct Run {
  std::vector<double> losses;
  size_t state_bytes = 0;   // allocator blocks (size classes) under the tag
  size_t state_tensor_bytes = 0;  // the state tensors' own bytes
};

// Bytes of the state tensors this rank holds (not the step counts).
size_t state_tensor_bytes(const Setup& s) {
  const optim::OptimizerStateDict state = s.zero ? s.zero->local_state_dict() : s.opt->state_dict();
  size_t bytes = 0;
  for (const auto& [key, value] : state.tensors) {
    if (key.size() < 5 || key.substr(key.size() - 5) != ".step") bytes += value.nbytes();
  }
  return bytes;
}

using LossFn = std::function<Tensor(nn::Module&, int step, int rank)>;

Run train(Setup& s, const LossFn& loss_of, int steps, int rank, int tag) {
  Run run;
  for (int step = 0; step < steps; ++step) {
    s.opt->zero_grad();
    Tensor loss = loss_of(*s.ddp, step, rank);
    loss.backward();
    {
      MemoryTagGuard guard(tag);
      s.opt->step();
    }
    run.losses.push_back(loss.item<double>());
  }
  // The last collective's buffers are released by the process group's worker a moment after wait() returns:
  // one more collective behind it makes sure they are gone before the count is read.
  default_group().barrier()->wait();
  run.state_bytes = memory_tag_stats(tag).allocated_bytes;
  run.state_tensor_bytes = state_tensor_bytes(s);
  return run;
}

Tensor mlp_loss(nn::Module& m, int step, int rank) {
  Generator gen(1000 + 10 * step + rank);
  Tensor x = randn({8, 1, 28, 28}, {}, &gen);
  Tensor y = randint(0, 10, {8}, {.dtype = DType::i64}, &gen);
  return cross_entropy(m(x), y);
}

models::GPTConfig small_gpt() { return models::GPTConfig::parse("block_size=16,n_layer=2,n_head=2,n_embd=32"); }

Tensor gpt_loss(nn::Module& m, int step, int rank) {
  Generator gen(2000 + 10 * step + rank);
  Tensor tokens = randint(0, 256, {4, 17}, {.dtype = DType::i64}, &gen);
  Tensor logits = m(tokens.narrow(1, 0, 16));
  return cross_entropy(reshape(logits, {4 * 16, 256}), reshape(tokens.narrow(1, 1, 16).contiguous(), {4 * 16}));
}

std::string describe(const std::vector<double>& a) {
  std::ostringstream os;
  os.precision(10);
  for (double v : a) os << v << " ";
  return os.str();
}

// Every mode's losses against DDP's, relative 1e-6; ZeRO's state bytes against DDP's / W.
void compare_modes(const std::function<std::shared_ptr<nn::Module>()>& make_model, const LossFn& loss_of, Opt kind,
                   int steps, int rank, int world) {
  int tag = 10;
  Setup ddp = make_setup(make_model, Mode::kDdp, kind);
  const Run reference = train(ddp, loss_of, steps, rank, tag++);
  size_t zero1_held = 0;  // bytes allocated while the ZeRO-1 setup lives, after its last step
  for (Mode mode : {Mode::kZero1, Mode::kZero2}) {
    Setup s = make_setup(make_model, mode, kind);
    const Run run = train(s, loss_of, steps, rank, tag++);
    const size_t held = cpu_allocator().stats().allocated_bytes;
    if (mode == Mode::kZero1) zero1_held = held;
    if (mode == Mode::kZero2) {
      // ZeRO-1 holds the full bucket buffers and param.grad (2 x the gradient bytes), ZeRO-2 the 1/W shards
      // only: without the bucket buffers released after their reduce-scatter it would hold at most 1 - 1/W less.
      size_t gradient_bytes = 0;
      for (const Tensor& p : s.model->parameters()) gradient_bytes += p.nbytes();
      expect(zero1_held > held && zero1_held - held >= gradient_bytes,
             "ZeRO-2 holds " + std::to_string(held) + " bytes after its steps, ZeRO-1 " + std::to_string(zero1_held) +
                 ": not a full gradient's " + std::to_string(gradient_bytes) + " bytes less (bucket buffers kept?)");
      // No full gradient is kept: param.grad is empty, the rank holds its 1/W shard of each bucket.
      for (const Tensor& p : s.model->parameters()) expect(!p.grad().defined(), "ZeRO-2 left a full param.grad");
      int64_t shard_numel = 0;
      for (const Tensor& shard : s.ddp->gradient_shards()) shard_numel += shard.numel();
      expect(shard_numel == s.zero->layout().shard_numel(),
             "ZeRO-2's gradient shards hold " + std::to_string(shard_numel) + " elements, the layout's shard " +
                 std::to_string(s.zero->layout().shard_numel()));
    }
    for (int i = 0; i < steps; ++i) {
      const double rel = std::abs(run.losses[i] - reference.losses[i]) / std::abs(reference.losses[i]);
      expect(rel <= 1e-6, std::string(mode_name(mode)) + " step " + std::to_string(i) + ": loss " +
                              describe({run.losses[i]}) + "vs DDP's " + describe({reference.losses[i]}));
    }
    // State tensors: DDP's / W plus the padding of each segment (< W elements per buffer and segment), exactly.
    const int64_t padding = static_cast<int64_t>(run.state_tensor_bytes) * world -
                            static_cast<int64_t>(reference.state_tensor_bytes);
    const auto& segments = s.zero->layout().segments();
    const int64_t most_padding = static_cast<int64_t>(segments.size()) * world * 4 * 2;
    expect(padding >= 0 && padding < most_padding,
           std::string(mode_name(mode)) + ": state tensors of " + std::to_string(run.state_tensor_bytes) +
               " bytes are not 1/" + std::to_string(world) + " of DDP's " +
               std::to_string(reference.state_tensor_bytes) + " plus padding");
    // Allocator blocks under the tag: the same share up to the size classes' rounding (at most 1/4 per block).
    const double share = static_cast<double>(run.state_bytes) / static_cast<double>(reference.state_bytes);
    report(std::string(mode_name(mode)) + " state bytes " + std::to_string(run.state_bytes) + " vs DDP " +
           std::to_string(reference.state_bytes) + " (" + std::to_string(share * world) + " x 1/W)");
    expect(reference.state_bytes >= reference.state_tensor_bytes, "DDP's state was not allocated under its tag");
    expect(share * world < 1.25 && share * world > 0.8,
           std::string(mode_name(mode)) + ": state bytes " + std::to_string(run.state_bytes) + " are not 1/" +
               std::to_string(world) + " of DDP's " + std::to_string(reference.state_bytes));
  }
}

std::shared_ptr<nn::Module> mlp() {
  Generator init(7);
  return models::make_model("mlp", &init);
}

std::shared_ptr<nn::Module> gpt() {
  Generator init(8);
  return std::make_shared<models::GPT>(small_gpt(), &init);
}

void expect_throws_with(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const std::exception& e) {
    expect(std::string(e.what()).find(needle) != std::string::npos,
           "the error '" + std::string(e.what()) + "' does not say '" + needle + "'");
    return;
  }
  expect(false, "no error (expected one saying '" + needle + "')");
}

}  // namespace

TEST_CASE("ZeRO-1 and ZeRO-2 equal DDP: MLP and GPT with AdamW, 50 steps, world 2 and 3; state bytes 1/W") {
  for (int world : {2, 3}) {
    auto outcomes = run_job(world, [world](int rank) {
      init_process_group(syncgrad::test::quick_init());
      compare_modes(mlp, mlp_loss, Opt::kAdamW, 50, rank, world);
      compare_modes(gpt, gpt_loss, Opt::kAdamW, 50, rank, world);
      destroy_process_group();
    }, {.deadline_seconds = 240});
    expect_all_ok(outcomes);
  }
}

TEST_CASE("ZeRO-1 and ZeRO-2 equal DDP with SGD momentum and with Adam (world 3)") {
  auto outcomes = run_job(3, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    compare_modes(mlp, mlp_loss, Opt::kSgd, 10, rank, 3);
    compare_modes(mlp, mlp_loss, Opt::kAdam, 10, rank, 3);
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}

TEST_CASE("ZeRO-2 + GradScaler: an overflow in one rank's shard makes every rank skip the step alike") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Setup s = make_setup(mlp, Mode::kZero2, Opt::kSgd);
    optim::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 2});
    std::string pattern;
    for (int step = 0; step < 5; ++step) {
      s.opt->zero_grad();
      Tensor loss = mlp_loss(*s.ddp, step, rank);
      // Step 2 on rank 1 only: an infinite loss, so inf/NaN lands in every rank's gradient shard.
      if (step == 2 && rank == 1) loss = mul(loss, Scalar(std::numeric_limits<double>::infinity()));
      scaler.scale(loss).backward();
      pattern += scaler.step(*s.opt) ? "1" : "0";
      scaler.update();
    }
    report("stepped " + pattern);
    expect(pattern == "11011", "steps taken " + pattern + ", expected 11011 on every rank");
    expect(scaler.get_scale() == 2048.0, "scale " + std::to_string(scaler.get_scale()));
    // Same weights on every rank.
    Tensor sum_all = zeros({1}, {.dtype = DType::f64});
    for (const Tensor& p : s.model->parameters()) raw::copy_(sum_all, add(sum_all, sum(p.to(DType::f64))));
    Tensor others = sum_all.clone();
    default_group().allreduce(others)->wait();
    expect(others.item<double>() == 2 * sum_all.item<double>(), "the ranks' weights differ");
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}

TEST_CASE("ZeRO clip_grad_norm_: the global norm over the shards, the same clipped training as DDP") {
  auto outcomes = run_job(3, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Setup ddp = make_setup(mlp, Mode::kDdp, Opt::kAdamW);
    Setup z1 = make_setup(mlp, Mode::kZero1, Opt::kAdamW);
    Setup z2 = make_setup(mlp, Mode::kZero2, Opt::kAdamW);
    for (int step = 0; step < 5; ++step) {
      double norms[3];
      double losses[3];
      Setup* setups[3] = {&ddp, &z1, &z2};
      for (int k = 0; k < 3; ++k) {
        Setup& s = *setups[k];
        s.opt->zero_grad();
        Tensor loss = mlp_loss(*s.ddp, step, rank);
        loss.backward();
        norms[k] = s.zero ? s.zero->clip_grad_norm_(0.5) : optim::clip_grad_norm_(s.model->parameters(), 0.5);
        s.opt->step();
        losses[k] = loss.item<double>();
      }
      for (int k = 1; k < 3; ++k) {
        // ZeRO-1 reads DDP's very gradients (only the float64 sums' order differs); ZeRO-2's are reduce-scattered
        // in float32, possibly summed in another order than the allreduce.
        expect(std::abs(norms[k] - norms[0]) <= (k == 1 ? 1e-12 : 1e-6) * norms[0],
               "step " + std::to_string(step) + ": norm " + describe({norms[k]}) + "vs DDP's " + describe({norms[0]}));
        expect(std::abs(losses[k] - losses[0]) <= 1e-6 * losses[0], "step " + std::to_string(step) + ": loss differs");
      }
      expect(norms[0] > 0.5, "the gradients were not large enough to be clipped: " + describe({norms[0]}));
    }
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}

namespace {

// The tensors of `a` and `b` are the same (names, shapes, values), and so are their groups.
void expect_same_state(const optim::OptimizerStateDict& a, const optim::OptimizerStateDict& b, const std::string& what) {
  expect(a.tensors.size() == b.tensors.size(), what + ": " + std::to_string(a.tensors.size()) + " tensors vs " +
                                                   std::to_string(b.tensors.size()));
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    expect(a.tensors[i].first == b.tensors[i].first, what + ": key " + a.tensors[i].first + " vs " + b.tensors[i].first);
    expect(a.tensors[i].second.sizes() == b.tensors[i].second.sizes(), what + ": shape of " + a.tensors[i].first);
    const double diff = max(abs(sub(a.tensors[i].second.to(DType::f64), b.tensors[i].second.to(DType::f64))))
                            .item<double>();
    expect(diff == 0.0, what + ": " + a.tensors[i].first + " differs by " + std::to_string(diff));
  }
  expect(a.groups == b.groups, what + ": the groups differ");
}

}  // namespace

TEST_CASE("ZeRO state: consolidated equals the plain optimizer's; saved (also sharded) at 2 ranks it continues "
          "exactly at 3 and 1") {
  const std::string dir = "zero_state_test_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  // 2 ranks: 6 steps of ZeRO-2 and of DDP; the consolidated state equals DDP's optimizer state bit for bit.
  auto first = run_job(2, [&](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Setup ddp = make_setup(mlp, Mode::kDdp, Opt::kAdamW);
    Setup zero = make_setup(mlp, Mode::kZero2, Opt::kAdamW);
    train(ddp, mlp_loss, 6, rank, 20);
    train(zero, mlp_loss, 6, rank, 21);
    expect_throws_with([&] { (void)zero.opt->state_dict(); }, "consolidate_state_dict");
    optim::save_sharded_optimizer_state(dir, *zero.zero);
    zero.zero->consolidate_state_dict(0);
    if (rank == 0) {
      const optim::OptimizerStateDict state = zero.opt->state_dict();
      expect_same_state(state, ddp.opt->state_dict(), "consolidated vs DDP");
      io::save_safetensors(dir + "/optimizer.safetensors", optim::optimizer_tensors(state),
                           {{optim::kOptimizerGroupsField, optim::optimizer_groups_json(state)}});
      nn::StateDict weights = zero.model->state_dict();
      io::save_safetensors(dir + "/model.safetensors", io::NamedTensors(weights.begin(), weights.end()));
    }
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(first);
  // 3 ranks and 1: ZeRO-1 / ZeRO-2 loaded from that state train on exactly as a plain DDP optimizer loaded from it.
  for (int world : {3, 1}) {
    auto second = run_job(world, [&, world](int rank) {
      init_process_group(syncgrad::test::quick_init());
      const io::SafetensorsContents saved = io::load_safetensors(dir + "/optimizer.safetensors");
      const optim::OptimizerStateDict state =
          optim::optimizer_state_from(saved.tensors, saved.metadata.at(optim::kOptimizerGroupsField), "optimizer");
      const io::SafetensorsContents weights = io::load_safetensors(dir + "/model.safetensors");
      const Setup probe = make_setup(mlp, Mode::kDdp, Opt::kAdamW);
      expect_same_state(optim::read_sharded_optimizer_state(dir, probe.model->parameters()), state,
                        "sharded save vs consolidated");
      std::vector<Run> runs;
      for (Mode mode : {Mode::kDdp, Mode::kZero1, Mode::kZero2}) {
        Setup s = make_setup(mlp, mode, Opt::kAdamW);
        load_model_state(*s.model, nn::StateDict(weights.tensors.begin(), weights.tensors.end()));
        if (mode == Mode::kZero2) {
          optim::load_sharded_optimizer_state(dir, *s.zero);  // the per-rank files of the 2-rank job
        } else {
          s.opt->load_state_dict(state);
        }
        runs.push_back(train(s, mlp_loss, 4, rank, 30 + static_cast<int>(mode)));
        if (mode != Mode::kDdp) {
          s.zero->consolidate_state_dict(0);
          if (rank == 0) report(std::string(mode_name(mode)) + " consolidated after resuming");
        }
      }
      // ZeRO-1 steps the same allreduced gradients elementwise: bit for bit. ZeRO-2's reduce-scatter may sum
      // the ranks in another order than the allreduce: relative 1e-6.
      for (size_t k = 1; k < runs.size(); ++k) {
        for (size_t i = 0; i < runs[0].losses.size(); ++i) {
          const double rel = std::abs(runs[k].losses[i] - runs[0].losses[i]) / std::abs(runs[0].losses[i]);
          expect(k == 1 ? rel == 0.0 : rel <= 1e-6, "world " + std::to_string(world) + " " +
                                                        mode_name(static_cast<Mode>(k)) + " step " +
                                                        std::to_string(i) + ": loss differs from DDP's after loading");
        }
      }
      destroy_process_group();
    }, {.deadline_seconds = 120});
    expect_all_ok(second);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("ZeRO bad inputs: other parameters on another rank, non-sharding DDP, wrong factory, extra group") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    const auto adamw = [](std::vector<Tensor> shards) { return make_plain(Opt::kAdamW, std::move(shards)); };
    // Rank 1 passes one parameter fewer.
    auto model = mlp();
    std::vector<Tensor> params = model->parameters();
    if (rank == 1) params.pop_back();
    expect_throws_with([&] { optim::ZeroRedundancyOptimizer z(params, default_group_ptr(), adamw); },
                       "rank 1 passed");
    expect_throws_with([&] { optim::ZeroRedundancyOptimizer z({}, default_group_ptr(), adamw); }, "empty parameter");
    expect_throws_with(
        [&] {
          optim::ZeroRedundancyOptimizer z(model->parameters(), default_group_ptr(), [](std::vector<Tensor>) {
            return make_plain(Opt::kSgd, {zeros({3})});
          });
        },
        "exactly the shard tensors");
    expect_throws_with([&] { optim::ZeroRedundancyOptimizer z({zeros({3})}, default_group_ptr(), adamw); },
                       "does not require grad");
    Tensor strided = zeros({4, 4}).transpose(0, 1);
    strided.requires_grad_(true);
    expect_throws_with([&] { optim::ZeroRedundancyOptimizer z({strided}, default_group_ptr(), adamw); },
                       "not contiguous");
    Setup ddp = make_setup(mlp, Mode::kDdp, Opt::kAdamW);
    optim::ZeroRedundancyOptimizer zero(ddp.model->parameters(), default_group_ptr(), adamw);
    expect_throws_with([&] { zero.use_gradient_shards(*ddp.ddp); }, "gradient_sharding");
    // A DDP whose buckets are not the optimizer's segments (other caps).
    auto other = mlp();
    DistributedDataParallel sharded(other, default_group_ptr(), ddp_options(Mode::kZero2));
    optim::ZeroRedundancyOptimizer default_caps(other->parameters(), default_group_ptr(), adamw);
    expect_throws_with([&] { default_caps.use_gradient_shards(sharded); }, "not this optimizer's segments");
    DDPOptions with_view = ddp_options(Mode::kZero2);
    with_view.gradient_as_bucket_view = true;
    expect_throws_with([&] { DistributedDataParallel d(mlp(), default_group_ptr(), with_view); },
                       "gradient_as_bucket_view");
    expect_throws_with([&] { sharded.register_comm_hook(allreduce_hook()); }, "takes no other comm hook");
    zero.add_param_group({{zeros({2})}, {}});
    expect_throws_with([&] { zero.step(); }, "add_param_group is not supported");
    // Only rank 0 in the sub-group.
    auto sub = default_group().new_group({0});
    if (rank == 1) {
      expect_throws_with([&] { optim::ZeroRedundancyOptimizer z(mlp()->parameters(), sub, adamw); }, "not a member");
    }
    destroy_process_group();
  }, {.deadline_seconds = 120});
  expect_all_ok(outcomes);
}
