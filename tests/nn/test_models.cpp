// models: MLP and CNN parameter names and shapes (PyTorch's keys), forward shapes, make_model, printing,
// and a few hand-written SGD steps lowering the loss on a tiny synthetic batch.
#include <doctest/doctest.h>

#include "syncgrad.h"
#include "tests/nn/helpers.h"

using namespace syncgrad;
using namespace syncgrad::nn_test;

namespace {

std::vector<std::pair<std::string, Shape>> names_and_shapes(const nn::Module& m) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& [name, t] : m.named_parameters()) out.emplace_back(name, t.sizes());
  return out;
}

// Runs `steps` plain SGD updates (p -= lr * grad under NoGradGuard) and returns the loss before each step.
std::vector<double> sgd_losses(nn::Module& model, const Tensor& x, const Tensor& y, double lr, int steps) {
  nn::CrossEntropyLoss criterion;
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    model.zero_grad();
    Tensor loss = criterion(model(x), y);
    losses.push_back(loss.item<double>());
    loss.backward();
    NoGradGuard no_grad;
    for (const Tensor& p : model.parameters()) raw::sub_(p, p.grad(), lr);
  }
  return losses;
}

}  // namespace

TEST_CASE("models::MLP: parameter names and shapes") {
  models::MLP mlp;
  CHECK(names_and_shapes(mlp) == std::vector<std::pair<std::string, Shape>>{{"fc1.weight", {256, 784}},
                                                                             {"fc1.bias", {256}},
                                                                             {"fc2.weight", {256, 256}},
                                                                             {"fc2.bias", {256}},
                                                                             {"fc3.weight", {10, 256}},
                                                                             {"fc3.bias", {10}}});
  CHECK(mlp.named_buffers().empty());
  Tensor images = zeros({3, 1, 28, 28});
  CHECK(mlp(images).sizes() == Shape{3, 10});
  check_close(values(mlp(images)), values(mlp(zeros({3, 784}))), 0);
  CHECK(contains(error_of<ShapeError>([&] { mlp(zeros({3, 28, 28})); }), "got [3, 28, 28]"));
}

TEST_CASE("models::CNN: parameter names and shapes, forward, printing") {
  Generator gen(0);
  models::CNN cnn(&gen);
  CHECK(names_and_shapes(cnn) == std::vector<std::pair<std::string, Shape>>{{"conv1.weight", {32, 1, 5, 5}},
                                                                             {"conv1.bias", {32}},
                                                                             {"conv2.weight", {64, 32, 5, 5}},
                                                                             {"conv2.bias", {64}},
                                                                             {"fc1.weight", {128, 3136}},
                                                                             {"fc1.bias", {128}},
                                                                             {"fc2.weight", {10, 128}},
                                                                             {"fc2.bias", {10}}});
  CHECK(keys_of(cnn.state_dict()) == keys_of(cnn.named_parameters()));
  CHECK(cnn(randn({2, 1, 28, 28}, {}, &gen)).sizes() == Shape{2, 10});
  CHECK(contains(error_of<ShapeError>([&] { cnn(zeros({2, 784})); }), "CNN.forward"));
  CHECK(cnn.to_string() ==
        "CNN(\n"
        "  (conv1): Conv2d(1, 32, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))\n"
        "  (conv2): Conv2d(32, 64, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))\n"
        "  (fc1): Linear(in_features=3136, out_features=128, bias=True)\n"
        "  (fc2): Linear(in_features=128, out_features=10, bias=True)\n"
        ")");
}

TEST_CASE("models::make_model: known names, seeded initialisation, unknown names") {
  Generator g1(5), g2(5);
  auto a = models::make_model("mlp", &g1);
  auto b = models::make_model("mlp", &g2);
  CHECK(a->type_name() == "MLP");
  check_close(values(a->parameters()[0]), values(b->parameters()[0]), 0);
  CHECK(models::make_model("cnn")->type_name() == "CNN");
  std::string msg = error_of<ValueError>([] { models::make_model("resnet"); });
  CHECK(contains(msg, "unknown model \"resnet\""));
  CHECK(contains(msg, "known models: mlp, cnn"));
}

TEST_CASE("models: a few SGD steps lower the loss on a tiny batch") {
  Generator gen(1);
  Tensor x = randn({8, 1, 28, 28}, {}, &gen);
  Tensor y = tensor({0, 1, 2, 3, 4, 5, 6, 7});
  SUBCASE("mlp") {
    models::MLP mlp(&gen);
    std::vector<double> losses = sgd_losses(mlp, x, y, 0.05, 6);
    for (size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  }
  SUBCASE("cnn") {
    models::CNN cnn(&gen);
    std::vector<double> losses = sgd_losses(cnn, x, y, 0.05, 4);
    for (size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  }
}
