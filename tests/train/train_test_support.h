// Shared by the in-process trainer suites (test_trainer.cpp, test_amp.cpp): whether Fashion-MNIST is installed
// (REQUIRE_DATA skips a case visibly without it), a fresh temporary directory per case, one training run with
// its console output captured, and the weights a run saved.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "data/fashion_mnist.h"
#include "tensor/io/safetensors.h"
#include "tools/train/trainer.h"

namespace syncgrad::train_test {

inline bool have_data() {
  return std::filesystem::exists(data::default_fashion_mnist_dir() + "/train-images-idx3-ubyte.gz") ||
         std::filesystem::exists(data::default_fashion_mnist_dir() + "/train-images-idx3-ubyte");
}

#define REQUIRE_DATA()                                                                                        \
  if (!syncgrad::train_test::have_data()) {                                                                   \
    MESSAGE("skipped: Fashion-MNIST not found at " << syncgrad::data::default_fashion_mnist_dir()             \
                                                   << " (install Debian's dataset-fashion-mnist)");          \
    return;                                                                                                   \
  }

// An empty directory under the system temp dir, unique to this process and `name`.
inline std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("syncgrad-train-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// One run of the trainer; its console output goes to *output when given.
inline train::TrainSummary run(const train::TrainConfig& c, std::string* output = nullptr) {
  std::ostringstream out;
  train::TrainSummary s = train::run_training(c, out);
  if (output != nullptr) *output = out.str();
  return s;
}

// Every tensor of DIR/latest/model.safetensors (the newest checkpoint), flattened in key order.
inline std::vector<float> weights_of(const std::string& dir) {
  std::vector<float> all;
  for (const auto& [name, t] : io::load_safetensors(dir + "/latest/model.safetensors").tensors) {
    auto v = to_vector<float>(t);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

}  // namespace syncgrad::train_test
