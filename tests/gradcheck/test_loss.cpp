// gradcheck of the losses: cross_entropy (every reduction, ignore_index, label smoothing, spatial dims),
// nll_loss and mse_loss.
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: cross_entropy reductions, ignore_index and label smoothing") {
  Tensor x = leaf({4, 5}, 11);
  Tensor t = tensor({3, 0, 4, 1});
  Tensor t_ignored = tensor({3, -100, 4, -100});
  CHECK_GRADCHECK("ce mean", [&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t); }, {x});
  CHECK_GRADCHECK("ce sum", [&](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], t, {.reduction = Reduction::sum});
  }, {x});
  CHECK_GRADCHECK("ce none", [&](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], t, {.reduction = Reduction::none});
  }, {x});
  CHECK_GRADCHECK("ce ignore_index", [&](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], t_ignored);
  }, {x});
  CHECK_GRADCHECK("ce label smoothing + ignore_index", [&](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], t_ignored, {.label_smoothing = 0.2});
  }, {x});
  CHECK_GRADCHECK("ce label smoothing none", [&](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], t, {.reduction = Reduction::none, .label_smoothing = 0.1});
  }, {x});
}

TEST_CASE("gradcheck: cross_entropy over (N, C, d1) logits") {
  Tensor x = leaf({2, 3, 2}, 12);
  Tensor t = tensor({0, 2, -100, 1}).reshape({2, 2});
  CHECK_GRADCHECK("ce spatial", [&](const std::vector<Tensor>& in) {
    return cross_entropy(in[0], t, {.label_smoothing = 0.3});
  }, {x});
}

TEST_CASE("gradcheck: nll_loss") {
  Tensor x = leaf({4, 3}, 13);
  Tensor t = tensor({2, -100, 0, 1});
  CHECK_GRADCHECK("nll of log_softmax", [&](const std::vector<Tensor>& in) {
    return nll_loss(log_softmax(in[0], 1), t);
  }, {x});
  CHECK_GRADCHECK("nll none", [&](const std::vector<Tensor>& in) {
    return nll_loss(in[0], t, {.reduction = Reduction::none});
  }, {x});
  Tensor y = leaf({2, 3, 2}, 14);
  Tensor ts = tensor({0, 2, 1, 1}).reshape({2, 2});
  CHECK_GRADCHECK("nll spatial sum", [&](const std::vector<Tensor>& in) {
    return nll_loss(in[0], ts, {.reduction = Reduction::sum});
  }, {y});
}

TEST_CASE("gradcheck: mse_loss in both arguments") {
  Tensor a = leaf({3, 4}, 15);
  Tensor b = leaf({3, 4}, 16);
  CHECK_GRADCHECK("mse mean", [](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1]); }, {a, b});
  CHECK_GRADCHECK("mse sum", [](const std::vector<Tensor>& in) {
    return mse_loss(in[0], in[1], Reduction::sum);
  }, {a, b});
  CHECK_GRADCHECK("mse none", [](const std::vector<Tensor>& in) {
    return mse_loss(in[0], in[1], Reduction::none);
  }, {a, b});
}
