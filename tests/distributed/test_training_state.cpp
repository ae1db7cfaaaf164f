// distributed::TrainingState: a 2-rank DDP loop (Gloo on 127.0.0.1) saved mid-epoch and restored into fresh
// objects (another seed, to show that nothing comes from the new set-up) sees the same next batches and ends
// with the same weights, bit for bit, as the uninterrupted loop -- also with PowerSGD, whose per-rank error
// feedback is saved; a job of another world size is refused, naming both sizes, unless elastic resume is allowed:
// then it continues the epoch with the samples no rank consumed; refusals name the file and the values.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops/dropout.h"
#include "autograd/ops/loss.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "distributed/comm_hook.h"
#include "distributed/ddp.h"
#include "distributed/init.h"
#include "distributed/training_state.h"
#include "nn/linear.h"
#include "optim/grad_scaler.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"
#include "tensor/generator.h"
#include "tensor/io/safetensors.h"
#include "tensor/ops/factories.h"
#include "tests/check_error.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::run_job;

namespace {

constexpr int64_t kSamples = 64;
constexpr int64_t kBatch = 4;  // per rank: 8 batches an epoch on 2 ranks

std::shared_ptr<const data::Dataset> dataset() {
  Generator gen(1);
  return std::make_shared<data::TensorDataset>(randn({kSamples, 8}, {}, &gen),
                                               randint(0, 4, {kSamples}, TensorOptions{DType::i64}, &gen));
}

// One rank's loop and everything it saves.
struct Loop {
  // With a comm hook, the DDP wrapper is tracked (its comm state and its module) instead of the model.
  explicit Loop(std::shared_ptr<ProcessGroup> group, uint64_t seed, std::shared_ptr<CommHook> hook = nullptr)
      : sampler(std::make_shared<data::DistributedSampler>(kSamples, group->size(), group->rank(), true, 3)),
        loader(dataset(), {.batch_size = kBatch, .sampler = sampler}),
        state(group) {
    Generator init(seed);
    model = std::make_shared<nn::Linear>(8, 4, true, &init);
    ddp = std::make_shared<DistributedDataParallel>(model, group, DDPOptions{.comm_hook = hook});
    optimizer = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    scheduler = std::make_unique<optim::StepLR>(*optimizer, 2, 0.5);
    manual_seed(seed);
    if (hook) state.track(*ddp);
    else state.track(*model);
    state.track(*optimizer).track(*scheduler).track(scaler).track(loader);
  }

  // Trains until `steps`; each step's first target goes to `seen`.
  void train_until(int64_t steps, std::vector<int64_t>& seen) {
    for (int64_t epoch = loader.state().epoch; state.step < steps; ++epoch) {
      sampler->set_epoch(epoch);
      for (data::Batch& batch : loader) {
        optimizer->zero_grad();
        Tensor loss = cross_entropy((*ddp)(dropout(batch.data, 0.25, true)), batch.target);
        scaler.scale(loss).backward();
        scaler.step(*optimizer);
        scaler.update();
        seen.push_back(batch.target.sum().item<int64_t>());
        if (++state.step % 4 == 0) scheduler->step();
        if (state.step == steps) break;
      }
    }
  }

  std::string weights() const {
    std::string bytes;
    for (const Tensor& p : model->parameters()) {
      const Tensor c = p.contiguous();
      bytes.append(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
    }
    return bytes;
  }

  std::shared_ptr<data::DistributedSampler> sampler;
  data::DataLoader loader;
  std::shared_ptr<nn::Linear> model;
  std::shared_ptr<DistributedDataParallel> ddp;
  std::unique_ptr<optim::SGD> optimizer;
  std::unique_ptr<optim::StepLR> scheduler;
  optim::GradScaler scaler;
  TrainingState state;
};

}  // namespace

TEST_CASE("TrainingState: saved mid-epoch and restored into fresh objects, 2 ranks continue bit for bit") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("syncgrad-training-state-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  auto outcomes = run_job(2, [&dir](int) {
    auto group = init_process_group(syncgrad::test::quick_init());
    std::vector<int64_t> straight_seen;
    std::string straight_weights;
    {
      Loop straight(group, 7);
      straight.train_until(20, straight_seen);
      straight_weights = straight.weights();
    }
    std::vector<int64_t> seen;
    {
      Loop first(group, 7);
      expect(!first.state.restore(dir), "a directory without checkpoints is a fresh start");
      first.train_until(11, seen);  // epoch 1, 3 of its 8 batches
      first.state.save(dir);
    }
    Loop resumed(group, 99);
    std::ostringstream warnings;
    expect(resumed.state.restore(dir, warnings), "the checkpoint is found");
    expect(resumed.state.step == 11, "the step is restored: " + std::to_string(resumed.state.step));
    expect(resumed.loader.state() == data::LoaderState{1, 3}, "the loader continues at epoch 1, batch 3");
    resumed.train_until(20, seen);
    expect(seen == straight_seen, "the batches after the restore are the uninterrupted run's");
    expect(resumed.weights() == straight_weights, "the weights after 20 steps are the uninterrupted run's");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
  CHECK(std::filesystem::exists(dir + "/step-000011/manifest.json"));

  // The same checkpoint in a job of another size is refused, naming both sizes.
  nn::Linear model(8, 4);
  TrainingState single;
  single.track(model);
  syncgrad::testing::check_error([&] { single.restore(dir); },
                                 {"training_state.safetensors", "world size 2 but this one has 1",
                                  "resume with 2 processes", "allow_world_size_change(true)", "SYNCGRAD_ELASTIC=1"});

  // Allowed, one process continues epoch 1 with the samples the 2 ranks left: their 3 batches of 4 each took
  // the first 24 entries of the epoch's order, so this process's DistributedSampler starts there.
  auto sampler = std::make_shared<data::DistributedSampler>(kSamples, 1, 0, true, 3);
  data::DataLoader loader(dataset(), {.batch_size = kBatch, .sampler = sampler});
  optim::SGD optimizer(model.parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::StepLR scheduler(optimizer, 2, 0.5);
  optim::GradScaler scaler;
  TrainingState elastic;
  elastic.track(model).track(optimizer).track(scheduler).track(scaler).track(loader).allow_world_size_change();
  CHECK(elastic.restore(dir));
  CHECK(elastic.step == 11);
  CHECK(loader.state() == data::LoaderState{1, 0});
  CHECK(sampler->epoch() == 1);
  CHECK(sampler->epoch_start() == 3 * kBatch * 2);
  std::vector<int64_t> epoch = sampler->indices();
  CHECK(static_cast<int64_t>(epoch.size()) == kSamples - 24);
  for (int64_t rank = 0; rank < 2; ++rank) {
    data::DistributedSampler old(kSamples, 2, rank, true, 3);
    old.set_epoch(1);
    const std::vector<int64_t> taken = old.indices();
    epoch.insert(epoch.end(), taken.begin(), taken.begin() + 3 * kBatch);
  }
  std::sort(epoch.begin(), epoch.end());
  for (int64_t i = 0; i < kSamples; ++i) CHECK(epoch[static_cast<size_t>(i)] == i);  // each sample once

  // A loader without a DistributedSampler cannot be split: refused before anything changes.
  data::DataLoader plain(dataset(), {.batch_size = kBatch});
  TrainingState unsplittable;
  unsplittable.track(model).track(plain).allow_world_size_change();
  syncgrad::testing::check_error([&] { unsplittable.restore(dir); },
                                 {"world size 2", "world size 1", "DistributedSampler"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("TrainingState: PowerSGD's per-rank error feedback and warm start are saved; 2 ranks continue bit for bit") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("syncgrad-training-state-powersgd-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  const auto hook = [] { return powersgd_hook({.start_iteration = 4}); };
  auto outcomes = run_job(2, [&](int) {
    auto group = init_process_group(syncgrad::test::quick_init());
    std::vector<int64_t> seen;
    std::string straight_weights;
    {
      Loop straight(group, 7, hook());
      straight.train_until(14, seen);
      straight_weights = straight.weights();
    }
    {
      Loop first(group, 7, hook());
      first.train_until(9, seen);  // compressing since step 4: error feedback and Q matter
      first.state.save(dir);
    }
    Loop resumed(group, 99, hook());
    expect(resumed.state.restore(dir), "the checkpoint is found");
    expect(resumed.ddp->synced_steps() == 9, "the DDP step count continues: " +
                                                 std::to_string(resumed.ddp->synced_steps()));
    resumed.train_until(14, seen);
    expect(resumed.weights() == straight_weights, "the weights after 14 steps are the uninterrupted run's");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
  const io::SafetensorsContents comm = io::load_safetensors(dir + "/step-000009/comm_state.safetensors");
  std::set<std::string> names;
  for (const auto& [name, tensor] : comm.tensors) names.insert(name);
  for (const char* name : {"rank0.iteration", "rank1.iteration", "rank0.hook.param0.error", "rank1.hook.param0.error",
                           "rank0.hook.param0.q", "rank1.hook.param0.q"}) {
    CHECK_MESSAGE(names.count(name) == 1, name);
  }
  // Each rank's error feedback is its own.
  const auto find = [&](const std::string& name) {
    for (const auto& [key, value] : comm.tensors) {
      if (key == name) return value;
    }
    return Tensor();
  };
  const Tensor e0 = find("rank0.hook.param0.error"), e1 = find("rank1.hook.param0.error");
  REQUIRE(e0.defined());
  REQUIRE(e1.defined());
  CHECK(std::memcmp(e0.data_ptr(), e1.data_ptr(), e0.nbytes()) != 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("TrainingState: refusals name what is missing") {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("syncgrad-training-state-bare-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  TrainingState empty;
  syncgrad::testing::check_error([&] { empty.save(dir); }, {"no model is tracked"});
  nn::Linear model(8, 4);
  TrainingState weights_only;
  weights_only.track(model);
  weights_only.step = 5;
  weights_only.save(dir);
  nn::Linear other(8, 4);
  optim::SGD optimizer(other.parameters(), {.lr = 0.1});
  optim::StepLR scheduler(optimizer, 2);
  TrainingState more;
  more.track(other).track(scheduler);
  syncgrad::testing::check_error([&] { more.restore(dir); }, {"holds no LR scheduler state", "lr_scheduler.*"});
  nn::Linear wider(8, 5);
  TrainingState mismatched;
  mismatched.track(wider);
  syncgrad::testing::check_error([&] { mismatched.restore(dir); }, {"model.safetensors"});
  std::filesystem::remove_all(dir);
}
