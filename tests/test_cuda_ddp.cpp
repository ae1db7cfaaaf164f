// DistributedDataParallel on CUDA tensors over the NCCL group, two ranks as threads (tests/nccl_ranks.h): after
// a few SGD steps each rank's model equals one CPU model trained on both ranks' batches together, with
// gradients copied out of the buckets and as views into them, with the used-parameter exchange on, and with the
// construction and step checks, whose small vectors travel on the ranks' devices. Part of test_cuda_nccl
// (its main skips without two devices; the emulated run gives it two fake ones).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "distributed/ddp.h"
#include "distributed/hash_store.h"
#include "optim/sgd.h"
#include "syncgrad.h"
#include "tests/nccl_ranks.h"

using namespace syncgrad;

namespace {

constexpr int kSteps = 3;
constexpr int64_t kBatchPerRank = 6;

// Linear 10 -> 16, ReLU, linear 16 -> 4; seeded, so every copy is equal.
std::shared_ptr<nn::Sequential> make_model() {
  Generator gen(5);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(10, 16, true, &gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(16, 4, true, &gen)});
}

// Step s's inputs (2 x kBatchPerRank, 10) and class targets, the same on every call.
std::pair<Tensor, Tensor> batch(int step) {
  Generator gen(100 + static_cast<uint64_t>(step));
  Tensor x = randn({2 * kBatchPerRank, 10}, {}, &gen);
  Tensor y = randint(0, 4, {2 * kBatchPerRank}, {.dtype = DType::i64}, &gen);
  return {x, y};
}

// The parameters after kSteps of SGD on the CPU with the whole batch.
std::vector<Tensor> reference() {
  auto model = make_model();
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = batch(step);
    sgd.zero_grad();
    cross_entropy(model->forward(x), y).backward();
    sgd.step();
  }
  return model->parameters();
}

double max_relative_difference(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<double> g = to_vector<double>(got[i].to(kCPU)), w = to_vector<double>(want[i]);
    for (size_t j = 0; j < w.size(); ++j) worst = std::max(worst, std::abs(g[j] - w[j]) / (std::abs(w[j]) + 1e-3));
  }
  return worst;
}

}  // namespace

TEST_CASE("DDP on CUDA over NCCL (two ranks as threads) trains like one process with the whole batch") {
  if (cuda_device_count() < 2) {
    MESSAGE("one CUDA device: DDP over NCCL needs two (one GPU per rank)");
    return;
  }
  const std::vector<Tensor> want = reference();
  for (bool as_views : {false, true}) {
    for (bool find_unused : {false, true}) {
      INFO("gradient_as_bucket_view " << as_views << ", find_unused_parameters " << find_unused);
      auto store = std::make_shared<distributed::HashStore>();
      std::vector<Tensor> got[2];
      const auto errors = testing::run_two_ranks([&](int rank) {
        const Device device(DeviceType::kCUDA, rank);
        auto group = testing::make_rank(store, rank);
        auto model = make_model();
        model->to(device);
        distributed::DDPOptions options;
        options.gradient_as_bucket_view = as_views;
        options.find_unused_parameters = find_unused;
        options.bucket_cap_mb = 0.0005;  // several buckets for this small model
        options.first_bucket_mb = 0.0005;
        distributed::DistributedDataParallel ddp(model, group, options);
        optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
        for (int step = 0; step < kSteps; ++step) {
          auto [x, y] = batch(step);
          const Tensor mine_x = raw::narrow(x, 0, rank * kBatchPerRank, kBatchPerRank).to(device);
          const Tensor mine_y = raw::narrow(y, 0, rank * kBatchPerRank, kBatchPerRank).to(device);
          sgd.zero_grad();
          cross_entropy(ddp.forward(mine_x), mine_y).backward();
          sgd.step();
        }
        got[rank] = model->parameters();
      });
      CHECK(errors[0] == "");
      CHECK(errors[1] == "");
      if (!errors[0].empty() || !errors[1].empty()) continue;
      CHECK(got[0][0].device() == Device(DeviceType::kCUDA, 0));
      CHECK(got[1][0].device() == Device(DeviceType::kCUDA, 1));
      CHECK(max_relative_difference(got[0], want) < 1e-5);
      CHECK(max_relative_difference(got[1], want) < 1e-5);
    }
  }
}
