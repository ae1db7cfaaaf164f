// CUDA end to end: short MLP and CNN training runs (linear, conv, batch norm, relu, max pool, cross-entropy,
// SGD with momentum and AdamW) whose losses and final weights match the same runs on the CPU, and the caching
// allocator over 1000 training steps (blocks are reused, nothing leaks, no new device allocation after the
// first steps); DataParallel over two devices against the whole-batch CPU run.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "optim/sgd.h"
#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;

namespace {

std::shared_ptr<nn::Sequential> make_mlp(uint64_t seed) {
  Generator gen(seed);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(20, 64, true, &gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(64, 32, true, &gen), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(32, 5, true, &gen)});
}

// conv(1 -> 4) + batch norm + relu + 2x2 max pool + linear, for (N, 1, 8, 8) images and 5 classes.
std::shared_ptr<nn::Sequential> make_cnn(uint64_t seed) {
  Generator gen(seed);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1, 1, 1, true, &gen), std::make_shared<nn::BatchNorm2d>(4),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(64, 5, true, &gen)});
}

struct Batch {
  Tensor input;   // (32, 20)
  Tensor target;  // (32) int64: the class a fixed random linear map scores highest, so there is something to learn
};

// Inputs (32, features) reshaped to `shape` (batch first).
std::vector<Batch> make_batches(int count, Device device, const Shape& shape = {32, 20}) {
  int64_t features = 1;
  for (size_t d = 1; d < shape.size(); ++d) features *= shape[d];
  Generator teacher_gen(99);
  const Tensor teacher = randn({features, 5}, {}, &teacher_gen);
  std::vector<Batch> batches;
  for (int i = 0; i < count; ++i) {
    Generator gen(100 + i);
    const Tensor input = randn({32, features}, {}, &gen);
    batches.push_back(
        {raw::to(raw::reshape(input, shape), device), raw::to(raw::argmax(raw::mm(input, teacher), 1), device)});
  }
  return batches;
}

// Losses of `steps` optimizer steps cycling over the batches.
std::vector<double> train(nn::Module& model, optim::Optimizer& optimizer, const std::vector<Batch>& batches,
                          int steps) {
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const Batch& batch = batches[step % batches.size()];
    optimizer.zero_grad();
    Tensor loss = cross_entropy(model.forward(batch.input), batch.target);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace

TEST_CASE("an MLP trained on CUDA follows the CPU run step by step") {
  for (bool adamw : {false, true}) {
    auto cpu_model = make_mlp(7);
    auto cuda_model = make_mlp(7);
    cuda_model->to(kCuda0);
    std::unique_ptr<optim::Optimizer> cpu_opt, cuda_opt;
    if (adamw) {
      cpu_opt = std::make_unique<optim::AdamW>(cpu_model->parameters(), optim::AdamWOptions{.lr = 3e-3});
      cuda_opt = std::make_unique<optim::AdamW>(cuda_model->parameters(), optim::AdamWOptions{.lr = 3e-3});
    } else {
      cpu_opt = std::make_unique<optim::SGD>(cpu_model->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
      cuda_opt = std::make_unique<optim::SGD>(cuda_model->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    }
    const std::vector<double> cpu_losses = train(*cpu_model, *cpu_opt, make_batches(4, kCPU), 30);
    const std::vector<double> cuda_losses = train(*cuda_model, *cuda_opt, make_batches(4, kCuda0), 30);
    INFO(std::string(adamw ? "AdamW" : "SGD with momentum"));
    CHECK(cuda_losses.back() < 0.8 * cuda_losses.front());
    for (size_t i = 0; i < cpu_losses.size(); ++i) {
      INFO("step " << i << ": CUDA " << cuda_losses[i] << ", CPU " << cpu_losses[i]);
      CHECK(cuda_losses[i] == doctest::Approx(cpu_losses[i]).epsilon(1e-4));
    }
    const std::vector<Tensor> cpu_params = cpu_model->parameters(), cuda_params = cuda_model->parameters();
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      INFO("parameter " << i);
      CHECK(cuda_params[i].device() == kCuda0);
      CHECK_EMPTY(mismatch(cuda_params[i], cpu_params[i], {1e-3, 1e-4}));
    }
  }
}

TEST_CASE("a CNN with batch norm trained on CUDA follows the CPU run step by step") {
  auto cpu_model = make_cnn(8);
  auto cuda_model = make_cnn(8);
  cuda_model->to(kCuda0);
  optim::SGD cpu_opt(cpu_model->parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD cuda_opt(cuda_model->parameters(), {.lr = 0.05, .momentum = 0.9});
  const std::vector<double> cpu_losses = train(*cpu_model, cpu_opt, make_batches(4, kCPU, {32, 1, 8, 8}), 20);
  const std::vector<double> cuda_losses = train(*cuda_model, cuda_opt, make_batches(4, kCuda0, {32, 1, 8, 8}), 20);
  CHECK(cuda_losses.back() < 0.8 * cuda_losses.front());
  for (size_t i = 0; i < cpu_losses.size(); ++i) {
    INFO("step " << i << ": CUDA " << cuda_losses[i] << ", CPU " << cpu_losses[i]);
    CHECK(cuda_losses[i] == doctest::Approx(cpu_losses[i]).epsilon(1e-4));
  }
  // Parameters and the batch norm's running statistics.
  const nn::StateDict cpu_state = cpu_model->state_dict(), cuda_state = cuda_model->state_dict();
  REQUIRE(cpu_state.size() == cuda_state.size());
  for (size_t i = 0; i < cpu_state.size(); ++i) {
    INFO(cpu_state[i].first);
    CHECK(cuda_state[i].first == cpu_state[i].first);
    CHECK_EMPTY(mismatch(cuda_state[i].second, cpu_state[i].second, {1e-3, 1e-4}));
  }
}

TEST_CASE("the caching allocator reuses blocks over 1000 training steps and leaks nothing") {
  Allocator& allocator = allocator_for(kCuda0);
  auto model = make_mlp(11);
  model->to(kCuda0);
  optim::Adam optimizer(model->parameters(), {.lr = 1e-3});
  const std::vector<Batch> batches = make_batches(2, kCuda0);
  train(*model, optimizer, batches, 5);  // optimizer state and every activation size allocated once
  const AllocatorStats warm = allocator.stats();
  train(*model, optimizer, batches, 1000);
  const AllocatorStats after = allocator.stats();
  const size_t warm_misses = warm.num_allocs - warm.num_cache_hits;
  const size_t after_misses = after.num_allocs - after.num_cache_hits;
  INFO("allocations " << after.num_allocs - warm.num_allocs << ", device allocations " << after_misses - warm_misses);
  CHECK(after.num_allocs > warm.num_allocs + 1000);
  CHECK(after_misses == warm_misses);
  CHECK(after.allocated_bytes == warm.allocated_bytes);
  CHECK(after.cached_bytes == warm.cached_bytes);
}

TEST_CASE("DataParallel over two CUDA devices follows the CPU model trained on the whole batch") {
  if (cuda_device_count() < 2) {
    MESSAGE("one CUDA device: DataParallel over devices needs two");
    return;
  }
  const Device cuda1(DeviceType::kCUDA, 1);
  auto cpu_model = make_mlp(7);
  auto module = make_mlp(7);
  module->to(kCuda0);
  distributed::DataParallel dp(module, [] { return make_mlp(0); }, {.devices = {kCuda0, cuda1}});
  optim::SGD cpu_opt(cpu_model->parameters(), {.lr = 0.05, .momentum = 0.9});
  optim::SGD dp_opt(module->parameters(), {.lr = 0.05, .momentum = 0.9});
  const std::vector<double> cpu_losses = train(*cpu_model, cpu_opt, make_batches(4, kCPU), 10);
  const std::vector<double> dp_losses = train(dp, dp_opt, make_batches(4, kCuda0), 10);
  for (size_t i = 0; i < cpu_losses.size(); ++i) {
    INFO("step " << i << ": DataParallel " << dp_losses[i] << ", CPU " << cpu_losses[i]);
    CHECK(dp_losses[i] == doctest::Approx(cpu_losses[i]).epsilon(1e-4));
  }
  const std::vector<Tensor> cpu_params = cpu_model->parameters(), dp_params = module->parameters();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    CHECK(dp_params[i].device() == kCuda0);
    CHECK_EMPTY(mismatch(dp_params[i], cpu_params[i], {1e-3, 1e-4}));
  }
  auto on_cpu = make_mlp(7);
  CHECK_THROWS_WITH_AS(distributed::DataParallel(on_cpu, [] { return make_mlp(0); }, {.devices = {kCuda0, cuda1}}),
                       doctest::Contains("move it there first"), DeviceError);
  CHECK_THROWS_WITH_AS(distributed::DataParallel(module, [] { return make_mlp(0); }, {.devices = {kCuda0, kCuda0}}),
                       doctest::Contains("listed twice"), ValueError);
}
