// DDP on CUDA over NCCL when a rank stops answering (two ranks as threads, tests/nccl_ranks.h): the other rank's
// step fails with a TimeoutError naming the stuck collective once the group's timeout has passed, its
// communicator aborted, so a dead peer never blocks a job for ever; new groups on a fresh store, resumed from the
// state saved before the failure, end with the parameters of an uninterrupted run, bit for bit (what
// syncgrad-launch --max-restarts does with whole processes). Part of test_cuda_nccl (its main skips without two
// devices; the emulated run gives it two fake ones).
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "distributed/ddp.h"
#include "distributed/errors.h"
#include "distributed/hash_store.h"
#include "optim/sgd.h"
#include "syncgrad.h"
#include "tests/nccl_ranks.h"

using namespace syncgrad;

namespace {

constexpr int kSteps = 4;
constexpr int kSavedAfter = 2;  // steps taken when the state is saved
constexpr int64_t kBatch = 6;   // per rank

// Linear 10 -> 16, ReLU, linear 16 -> 4 on `device`, the same weights on every call.
std::shared_ptr<nn::Sequential> make_model(Device device) {
  Generator gen(7);
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(10, 16, true, &gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(16, 4, true, &gen)});
  model->to(device);
  return model;
}

// Rank `rank`'s inputs and targets of step `step`, on `device`.
std::pair<Tensor, Tensor> batch(int step, int rank, Device device) {
  Generator gen(300 + static_cast<uint64_t>(10 * step + rank));
  return {randn({kBatch, 10}, {}, &gen).to(device), randint(0, 4, {kBatch}, {.dtype = DType::i64}, &gen).to(device)};
}

// A checkpoint in memory: the model's and the optimizer's state, copied to the CPU.
struct Saved {
  nn::StateDict model;
  optim::OptimizerStateDict optimizer;
};

Saved save(const nn::Module& model, const optim::Optimizer& optimizer) {
  Saved saved{model.state_dict(), optimizer.state_dict()};
  for (auto& [name, t] : saved.model) t = t.to(kCPU).clone();
  for (auto& [name, t] : saved.optimizer.tensors) t = t.to(kCPU).clone();
  return saved;
}

struct RankRun {
  std::shared_ptr<distributed::ProcessGroup> group;  // kept by the caller: a stopped rank's group stays alive
  std::optional<Saved> saved;
  std::vector<Tensor> parameters;
};

// Trains steps [from, to) of rank `rank` (resuming from `resume` when from > 0), saving after kSavedAfter steps.
void train(RankRun& run, const std::shared_ptr<distributed::Store>& store, int rank, int from, int to,
           std::chrono::milliseconds timeout, const Saved* resume) {
  const Device device(DeviceType::kCUDA, rank);
  run.group = testing::make_rank(store, rank, timeout);
  auto model = make_model(device);
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  if (resume != nullptr) {
    model->load_state_dict(resume->model);
    sgd.load_state_dict(resume->optimizer);
  }
  distributed::DistributedDataParallel ddp(model, run.group, {});
  for (int step = from; step < to; ++step) {
    auto [x, y] = batch(step, rank, device);
    sgd.zero_grad();
    cross_entropy(ddp.forward(x), y).backward();
    sgd.step();
    if (step + 1 == kSavedAfter) run.saved = save(*model, sgd);
  }
  run.parameters = model->parameters();
}

bool bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (to_vector<float>(a[i].to(kCPU)) != to_vector<float>(b[i].to(kCPU))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("DDP over NCCL: a rank that stops answering fails its peer's step within the timeout; a restart from "
          "the saved state ends bit-identical to an uninterrupted run") {
  if (cuda_device_count() < 2) {
    MESSAGE("one CUDA device: DDP over NCCL needs two (one GPU per rank)");
    return;
  }
  const auto timeout = std::chrono::milliseconds{1000};
  RankRun straight[2];
  auto store = std::make_shared<distributed::HashStore>();
  auto errors = testing::run_two_ranks(
      [&](int rank) { train(straight[rank], store, rank, 0, kSteps, timeout, nullptr); });
  REQUIRE(errors[0] == "");
  REQUIRE(errors[1] == "");
  straight[0].group.reset();
  straight[1].group.reset();

  // Rank 1 stops after step kSavedAfter + 1 (as a killed process would: it never calls another collective).
  RankRun failed[2];
  std::string timeout_message;
  double failed_after_seconds = 0;
  store = std::make_shared<distributed::HashStore>();
  errors = testing::run_two_ranks([&](int rank) {
    if (rank == 1) {
      train(failed[1], store, 1, 0, kSavedAfter + 1, timeout, nullptr);
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      train(failed[0], store, 0, 0, kSteps, timeout, nullptr);
    } catch (const distributed::TimeoutError& e) {
      timeout_message = e.what();
      failed_after_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
  INFO(timeout_message);
  CHECK(timeout_message.find("did not finish within 1000 ms") != std::string::npos);
  CHECK(timeout_message.find("aborted") != std::string::npos);
  CHECK(failed_after_seconds < 60);  // a hang guard, not a timing check
  REQUIRE(failed[0].saved.has_value());
  REQUIRE(failed[1].saved.has_value());
  failed[0].group.reset();
  failed[1].group.reset();

  // The restart: new groups on a fresh store, each rank resumed from its saved state.
  RankRun resumed[2];
  store = std::make_shared<distributed::HashStore>();
  errors = testing::run_two_ranks([&](int rank) {
    train(resumed[rank], store, rank, kSavedAfter, kSteps, timeout, &*failed[rank].saved);
  });
  REQUIRE(errors[0] == "");
  REQUIRE(errors[1] == "");
  CHECK(bit_identical(resumed[0].parameters, straight[0].parameters));
  CHECK(bit_identical(resumed[1].parameters, straight[1].parameters));
  CHECK(bit_identical(resumed[0].parameters, resumed[1].parameters));
}
