// models::ResNet: parameter counts and torchvision's names, output shapes, make_model, torchvision's
// initialisation, BatchNorm in train and eval mode inside the model, config errors, and a few SGD steps lowering
// the loss. Gradients are checked in tests/gradcheck/test_resnet.cpp, PyTorch equality in
// tests/train/test_resnet_torch.sh.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "syncgrad.h"
#include "tests/nn/helpers.h"

using namespace syncgrad;
using namespace syncgrad::nn_test;

namespace {

int64_t count(const nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}

Shape shape_of(const nn::Module& m, const std::string& name) {
  for (const auto& [key, t] : m.state_dict()) {
    if (key == name) return t.sizes();
  }
  FAIL("no state entry " << name);
  return {};
}

double standard_deviation(const Tensor& t) {
  std::vector<double> v = values(t);
  double mean = 0, sq = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(v.size()));
}

}  // namespace

TEST_CASE("resnet18 (CIFAR): 11,173,962 parameters under torchvision's names") {
  Generator gen(0);
  auto model = models::resnet18(&gen);
  CHECK(count(*model) == 11173962);
  std::vector<std::string> keys = keys_of(model->state_dict());
  REQUIRE(keys.size() >= 8);
  CHECK(std::vector<std::string>(keys.begin(), keys.begin() + 8) ==
        std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                                 "bn1.num_batches_tracked", "layer1.0.conv1.weight", "layer1.0.bn1.weight"});
  CHECK(keys.back() == "fc.bias");
  CHECK(shape_of(*model, "conv1.weight") == Shape{64, 3, 3, 3});  // 3x3 stem, no max-pool
  CHECK(shape_of(*model, "layer1.1.conv2.weight") == Shape{64, 64, 3, 3});
  CHECK(shape_of(*model, "layer2.0.conv1.weight") == Shape{128, 64, 3, 3});
  CHECK(shape_of(*model, "layer2.0.downsample.0.weight") == Shape{128, 64, 1, 1});
  CHECK(shape_of(*model, "layer2.0.downsample.1.running_var") == Shape{128});
  CHECK(shape_of(*model, "layer4.1.bn2.weight") == Shape{512});
  CHECK(shape_of(*model, "fc.weight") == Shape{10, 512});
  CHECK(std::count_if(keys.begin(), keys.end(), [](const std::string& k) { return contains(k, "downsample"); }) ==
        3 * 6);  // stages 2-4: conv weight + 5 BatchNorm entries
  CHECK_FALSE(std::any_of(keys.begin(), keys.end(),
                          [](const std::string& k) { return contains(k, "layer1.0.downsample"); }));
}

TEST_CASE("resnet20: He et al.'s CIFAR network with option A shortcuts, 269,722 parameters") {
  auto model = models::resnet20();
  CHECK(count(*model) == 269722);
  std::vector<std::string> keys = keys_of(model->state_dict());
  CHECK_FALSE(std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return contains(k, "downsample"); }));
  CHECK(shape_of(*model, "conv1.weight") == Shape{16, 3, 3, 3});
  CHECK(shape_of(*model, "layer1.2.conv2.weight") == Shape{16, 16, 3, 3});
  CHECK(shape_of(*model, "layer2.0.conv1.weight") == Shape{32, 16, 3, 3});
  CHECK(shape_of(*model, "layer3.2.bn2.running_mean") == Shape{64});
  CHECK(shape_of(*model, "fc.weight") == Shape{10, 64});
  CHECK_FALSE(std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return contains(k, "layer4"); }));
  // The same network with projection shortcuts (option B) adds two 1x1 conv + BatchNorm pairs.
  models::ResNetConfig b = models::resnet20_config();
  b.shortcut = models::Shortcut::projection;
  CHECK(count(models::ResNet(b)) == 269722 + 16 * 32 + 2 * 32 + 32 * 64 + 2 * 64);
}

TEST_CASE("ResNet forward: logits per image for any image size; wrong inputs are ShapeErrors") {
  Generator gen(1);
  auto model = models::resnet20(&gen);
  CHECK(model->forward(randn({3, 3, 32, 32}, {}, &gen)).sizes() == Shape{3, 10});
  CHECK(model->forward(randn({2, 3, 12, 20}, {}, &gen)).sizes() == Shape{2, 10});
  CHECK(contains(error_of<ShapeError>([&] { model->forward(zeros({2, 1, 32, 32})); }),
                 "[N, 3, H, W], got [2, 1, 32, 32]"));
  CHECK(contains(error_of<ShapeError>([&] { model->forward(zeros({3, 32, 32})); }), "ResNet.forward"));
}

TEST_CASE("make_model knows resnet18 and resnet20") {
  auto names = models::model_names();
  CHECK(std::find(names.begin(), names.end(), "resnet18") != names.end());
  CHECK(std::find(names.begin(), names.end(), "resnet20") != names.end());
  Generator g1(3), g2(3);
  auto a = models::make_model("resnet20", &g1), b = models::make_model("resnet20", &g2);
  CHECK(a->type_name() == "ResNet");
  check_close(values(a->parameters()[0]), values(b->parameters()[0]), 0);
  CHECK(count(*models::make_model("resnet18", &g1)) == 11173962);
}

TEST_CASE("ResNet initialisation follows torchvision") {
  Generator gen(4);
  auto model = models::resnet18(&gen);
  // Convolutions: kaiming_normal_(fan_out, relu): std sqrt(2 / (out_channels * 9)).
  const Tensor& w = model->layers[3]->named_parameters()[0].second;  // layer4.0.conv1.weight (512, 256, 3, 3)
  CHECK(standard_deviation(w) == doctest::Approx(std::sqrt(2.0 / (512 * 9))).epsilon(0.02));
  const auto& block = static_cast<const models::BasicBlock&>(*(*model->layers[1])[0]);
  const Tensor& projection = static_cast<const nn::Conv2d&>(*(*block.downsample)[0]).weight;  // (128, 64, 1, 1)
  CHECK(standard_deviation(projection) == doctest::Approx(std::sqrt(2.0 / 128)).epsilon(0.05));
  // BatchNorm: weight 1, bias 0; fc: PyTorch's Linear default, U(-1/sqrt(512), 1/sqrt(512)).
  check_close(values(block.bn2->weight), std::vector<double>(128, 1.0), 0);
  check_close(values(block.bn2->bias), std::vector<double>(128, 0.0), 0);
  std::vector<double> fc = values(model->fc->weight);
  const double bound = 1 / std::sqrt(512.0);
  CHECK(*std::max_element(fc.begin(), fc.end()) <= bound);
  CHECK(*std::min_element(fc.begin(), fc.end()) >= -bound);
  CHECK(standard_deviation(model->fc->weight) == doctest::Approx(bound / std::sqrt(3.0)).epsilon(0.1));
}

TEST_CASE("ResNet BatchNorm: batch statistics and running updates in train mode, running statistics in eval") {
  Generator gen(5);
  auto model = models::resnet20(&gen);
  Tensor x = randn({4, 3, 16, 16}, {}, &gen);
  const Tensor& running_mean = model->bn1->running_mean;
  SUBCASE("train") {
    Tensor alone = model->forward(narrow(x, 0, 0, 2));
    CHECK(model->bn1->num_batches_tracked.item<int64_t>() == 1);
    CHECK(raw::sum(raw::abs(running_mean)).item<double>() > 0);  // moved towards the batch mean
    Tensor together = model->forward(x);
    // The first two images' logits depend on the other images of the batch.
    CHECK(raw::sum(raw::abs(raw::sub(narrow(together, 0, 0, 2), alone))).item<double>() > 1e-4);
  }
  SUBCASE("eval") {
    model->eval();
    Tensor before = running_mean.clone();
    Tensor alone = model->forward(narrow(x, 0, 0, 2));
    Tensor together = model->forward(x);
    check_close(values(narrow(together, 0, 0, 2)), values(alone), 1e-5);
    check_close(values(running_mean), values(before), 0);
    CHECK(model->bn1->num_batches_tracked.item<int64_t>() == 0);
  }
}

TEST_CASE("ResNetConfig errors name the bad values") {
  CHECK(contains(error_of<ValueError>([] { models::ResNet({{16, 32}, {3}}); }), "2 widths and 1 block counts"));
  CHECK(contains(error_of<ValueError>([] { models::ResNet({{16, 0}, {1, 1}}); }), "stage 2 has width 0"));
  CHECK(contains(error_of<ValueError>([] {
                   models::ResNet({{16, 25}, {1, 1}, models::Shortcut::zero_pad});
                 }),
                 "zero-pad shortcut from 16 to 25 channels"));
}

TEST_CASE("ResNet: a few SGD steps lower the loss on a tiny batch") {
  Generator gen(6);
  Tensor x = randn({8, 3, 8, 8}, {}, &gen);
  Tensor y = tensor({0, 1, 2, 3, 4, 5, 6, 7});
  for (const auto& config : {models::resnet20_config(), models::ResNetConfig{{8, 16}, {1, 1}}}) {
    models::ResNet model(config, &gen);
    nn::CrossEntropyLoss criterion;
    std::vector<double> losses;
    for (int i = 0; i < 5; ++i) {
      model.zero_grad();
      Tensor loss = criterion(model(x), y);
      losses.push_back(loss.item<double>());
      loss.backward();
      NoGradGuard no_grad;
      for (const Tensor& p : model.parameters()) raw::sub_(p, p.grad(), 0.05);
    }
    CHECK(losses.back() < losses.front());
  }
}
