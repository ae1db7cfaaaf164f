// syncgrad-train's held-out evaluation shared by 2 real processes (tools/train/evaluation.h): each rank
// evaluates its share of the batches, and both get exactly (==, not approximately) the value one process
// evaluating everything gives: Fashion-MNIST test accuracy (mlp and cnn) and the text task's validation loss.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "distributed/init.h"
#include "models/models.h"
#include "tests/distributed/multiprocess.h"
#include "tools/train/evaluation.h"
#include "tools/train/task.h"

using namespace syncgrad;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::report;
using syncgrad::test::run_job;

namespace {

bool have_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") ||
         std::getenv("SYNCGRAD_DATA_DIR") != nullptr;
}

// Evaluates the task's model (initialised from a fixed seed) on 2 ranks and alone; expects equal values.
void expect_sharded_equals_single(const train::TrainConfig& config) {
  auto outcomes = run_job(2, [&](int) {
    distributed::init_process_group(test::quick_init());
    const auto task = train::make_task(config);
    Generator gen(3);
    const auto model = task->make_model(&gen);
    const train::Evaluation shared = train::evaluate(*task, *model, &distributed::default_group());
    const train::Evaluation alone = train::evaluate(*task, *model);
    char line[200];
    std::snprintf(line, sizeof line, "%s: shared %.17g alone %.17g (%s)", config.model.c_str(), shared.value,
                  alone.value, shared.text.c_str());
    report(line);
    expect(shared.value == alone.value, line);
    expect(shared.text == alone.text, "the same summary text");
  }, {.deadline_seconds = 300});
  expect_all_ok(outcomes);
  CHECK(outcomes[0].report == outcomes[1].report);
}

}  // namespace

TEST_CASE("sharded test accuracy equals one process's, on every rank (mlp, cnn)") {
  if (!have_fashion_mnist()) {
    MESSAGE("SKIP: Fashion-MNIST is not installed");
    return;
  }
  for (const char* model : {"mlp", "cnn"}) {
    train::TrainConfig config;
    config.model = model;
    expect_sharded_equals_single(config);
  }
}

TEST_CASE("sharded validation loss equals one process's, bit for bit (text task)") {
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("syncgrad-parallel-eval-" + std::to_string(getpid()) + ".txt")).string();
  {
    std::ofstream out(file);
    for (int i = 0; i < 3000; ++i) out << "the quick brown fox " << i % 97 << " jumps over the lazy dog\n";
  }
  train::TrainConfig config;
  config.model = "gpt";
  config.data_dir = file;
  config.model_config = "block_size=16,n_layer=1,n_head=2,n_embd=16";
  expect_sharded_equals_single(config);
  std::filesystem::remove(file);
}
