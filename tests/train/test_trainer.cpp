// syncgrad-train end to end on the real Fashion-MNIST (skipped visibly when the data is not installed):
// accuracy targets, exact resume, --init-from, and every bad-input path of the trainer.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/fashion_mnist.h"
#include "syncgrad.h"
#include "tensor/io/safetensors.h"
#include "tools/train/trainer.h"
#include "tests/train/train_test_support.h"

using namespace syncgrad;
using syncgrad::train::TrainConfig;
using syncgrad::train_test::run;
using syncgrad::train_test::temp_dir;
using syncgrad::train_test::weights_of;

// The targets at seed 0 with SGD lr 0.05, momentum 0.9, batch 64 and the trainer's default cosine
// schedule. Measured (2026-11-29, AMD EPYC Zen 5): MLP 86.3% / 88.3% (1 / 3 epochs), CNN 89.0%; with a constant
// lr both syncgrad and PyTorch land at 85.5-87.2% (docs/BENCHMARKS.md). The targets sit far below the seed
// spread that any CPU's rounding moves a run by (bench/seed_spread.sh, tests/train/accuracy_margins.h): one
// epoch of the MLP over seeds 0-9 on an Intel Xeon averages 86.46% with a standard deviation of 0.15 points,
// 16 standard deviations above 84%; the CNN over seeds 0-4 averages 89.30% with
// 0.42 points, 5.5 standard deviations above 87%.
TEST_CASE("MLP: >= 84% test accuracy after one epoch, >= 86% after three (SGD 0.05, momentum 0.9, batch 64)") {
  REQUIRE_DATA();
  TrainConfig c;
  c.model = "mlp";
  c.epochs = 3;
  std::string dir = temp_dir("mlp3");
  c.checkpoint_dir = dir;
  TrainConfig one = c;
  one.epochs = 1;
  one.checkpoint_dir.clear();
  double after_one = run(one).evaluation.value;
  MESSAGE("MLP accuracy after 1 epoch: " << after_one);
  CHECK(after_one >= 0.84);
  double after_three = run(c).evaluation.value;
  MESSAGE("MLP accuracy after 3 epochs: " << after_three);
  CHECK(after_three >= 0.86);
  std::filesystem::remove_all(dir);
}

TEST_CASE("CNN: >= 87% test accuracy after one epoch") {
  REQUIRE_DATA();
  TrainConfig c;  // the defaults are the main job: cnn, one epoch
  train::TrainSummary s = run(c);
  MESSAGE("CNN accuracy after 1 epoch: " << s.evaluation.value << " (" << s.samples_per_second << " samples/s)");
  CHECK(s.evaluation.value >= 0.87);
}

TEST_CASE("the cosine schedule anneals lr over --epochs; --max-steps stops early on the same curve") {
  REQUIRE_DATA();
  // 938 batches of 64 per epoch; the lr of step k (1-based) is 0.05 * (1 + cos(pi (k - 1) / 1876)) / 2.
  auto logged_lr = [](TrainConfig c, const std::string& name) {
    c.model = "mlp";
    c.epochs = 2;
    c.log_every = 469;
    c.log_file = temp_dir(name) + "/log.csv";
    run(c);
    std::ifstream in(c.log_file);
    std::string header, row;
    std::getline(in, header);
    std::vector<double> lrs;
    while (std::getline(in, row)) {
      std::vector<std::string> cells;
      std::stringstream cells_in(row);
      for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
      if (cells.at(9) == "eval") continue;    // an evaluation row has no lr
      lrs.push_back(std::stod(cells.at(3)));  // step,epoch,loss,lr,...
    }
    std::filesystem::remove_all(std::filesystem::path(c.log_file).parent_path());
    return lrs;
  };
  auto expected = [](int64_t step) { return 0.05 * 0.5 * (1 + std::cos(M_PI * static_cast<double>(step - 1) / 1876)); };
  TrainConfig c;
  c.max_steps = 938;
  std::vector<double> lrs = logged_lr(c, "cosine");
  REQUIRE(lrs.size() == 2);
  CHECK(lrs[0] == doctest::Approx(expected(469)).epsilon(1e-6));
  CHECK(lrs[1] == doctest::Approx(expected(938)).epsilon(1e-6));
  c.lr_schedule = train::LrSchedule::kConstant;
  lrs = logged_lr(c, "constant");
  REQUIRE(lrs.size() == 2);
  CHECK(lrs[0] == 0.05);
  CHECK(lrs[1] == 0.05);
}

TEST_CASE("resume continues exactly: N steps + save + resume + N steps equals 2N steps") {
  REQUIRE_DATA();
  for (const std::string optimizer : {"sgd", "adamw"}) {
    CAPTURE(optimizer);
    TrainConfig c;
    c.model = "mlp";
    c.optimizer = train::parse_optimizer_kind(optimizer);
    c.lr = optimizer == "sgd" ? 0.05 : 1e-3;
    c.epochs = 2;
    // 950 steps crosses the epoch boundary (938 batches per epoch) after the resume point.
    std::string straight = temp_dir("straight-" + optimizer), first = temp_dir("first-" + optimizer),
                second = temp_dir("second-" + optimizer);
    c.max_steps = 950;
    c.checkpoint_dir = straight;
    run(c);
    c.max_steps = 475;
    c.checkpoint_dir = first;
    run(c);
    c.max_steps = 950;
    c.checkpoint_dir = second;
    c.resume = first;
    run(c);
    std::vector<float> a = weights_of(straight), b = weights_of(second);
    REQUIRE(a.size() == b.size());
    CHECK(a == b);
    for (const auto& d : {straight, first, second}) std::filesystem::remove_all(d);
  }
}

TEST_CASE("--init-from starts from given weights; a checkpoint of another model is refused by name") {
  REQUIRE_DATA();
  TrainConfig c;
  c.model = "mlp";
  c.max_steps = 5;
  std::string dir = temp_dir("init");
  c.checkpoint_dir = dir;
  double trained = run(c).evaluation.value;
  TrainConfig from = c;
  from.checkpoint_dir.clear();
  from.max_steps = 0;
  from.epochs = 1;
  from.init_from = dir + "/latest/model.safetensors";
  from.lr = 0;  // no learning: the accuracy is that of the loaded weights
  from.momentum = 0;
  CHECK(run(from).evaluation.value == trained);
  from.init_from.clear();
  CHECK(run(from).evaluation.value != trained);  // fresh weights score differently

  TrainConfig wrong = from;
  wrong.init_from = dir + "/latest/model.safetensors";
  wrong.model = "cnn";
  try {
    run(wrong);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("model.safetensors") != std::string::npos);
    CHECK(msg.find("conv1.weight") != std::string::npos);
  }
  TrainConfig resume_wrong = c;
  resume_wrong.model = "cnn";
  resume_wrong.resume = dir;
  resume_wrong.checkpoint_dir.clear();
  try {
    run(resume_wrong);
    FAIL("expected an error");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("\"mlp\"") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a corrupt or truncated checkpoint is a clear error and nothing is overwritten") {
  REQUIRE_DATA();
  TrainConfig c;
  c.model = "mlp";
  c.max_steps = 3;
  std::string dir = temp_dir("corrupt");
  c.checkpoint_dir = dir;
  run(c);
  std::string file = dir + "/latest/training_state.safetensors";
  auto size = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, size / 2);
  auto model_bytes = std::filesystem::file_size(dir + "/latest/model.safetensors");
  TrainConfig resume = c;
  resume.resume = dir;
  resume.max_steps = 6;
  try {
    run(resume);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("training_state.safetensors") != std::string::npos);
  }
  CHECK(std::filesystem::file_size(file) == size / 2);
  CHECK(std::filesystem::file_size(dir + "/latest/model.safetensors") == model_bytes);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad data directory, unwritable checkpoint directory and a diverging loss are clear errors") {
  TrainConfig c;
  c.data_dir = "/nonexistent/fashion";
  try {
    run(c);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("/nonexistent/fashion") != std::string::npos);
    CHECK(msg.find("dataset-fashion-mnist") != std::string::npos);
  }
  REQUIRE_DATA();
  std::string dir = temp_dir("blocked");
  std::ofstream(dir + "/a-file") << "x";
  TrainConfig blocked;
  blocked.model = "mlp";
  blocked.checkpoint_dir = dir + "/a-file/sub";
  CHECK_THROWS_AS(run(blocked), IOError);

  TrainConfig diverge;
  diverge.model = "mlp";
  diverge.lr = 1e12;
  diverge.max_steps = 50;
  try {
    run(diverge);
    FAIL("expected the loss to diverge");
  } catch (const train::NonFiniteLossError& e) {
    CHECK(std::string(e.what()).find("at step") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}
