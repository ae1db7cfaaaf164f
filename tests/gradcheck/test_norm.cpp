// gradcheck of batch_norm (training with and without affine, eval), batch_norm_relu, layer_norm, dropout and
// embedding.
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: batch_norm training with affine on (4, 3) and (2, 3, 2, 2)") {
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 2, 2}}) {
    INFO(shape_str(shape));
    Tensor x = leaf(shape, 1), w = leaf({3}, 2), b = leaf({3}, 3);
    Tensor running_mean = zeros({3}, {.dtype = DType::f64}), running_var = ones({3}, {.dtype = DType::f64});
    CHECK_GRADCHECK("batch_norm train affine " + shape_str(shape), [&](const std::vector<Tensor>& in) {
      return batch_norm(in[0], running_mean, running_var, in[1], in[2], true);
    }, {x, w, b});
  }
}

TEST_CASE("gradcheck: batch_norm training without affine on (4, 3) and (2, 3, 2, 2)") {
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 2, 2}}) {
    Tensor x = leaf(shape, 4);
    CHECK_GRADCHECK("batch_norm train " + shape_str(shape), [](const std::vector<Tensor>& in) {
      return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3);
    }, {x});
  }
}

TEST_CASE("gradcheck: batch_norm eval with running stats, with and without affine") {
  Tensor x = leaf({2, 3, 2, 2}, 5), w = leaf({3}, 6), b = leaf({3}, 7);
  Tensor running_mean = tensor({0.2, -0.5, 1.0});
  Tensor running_var = tensor({0.8, 1.5, 0.3});
  CHECK_GRADCHECK("batch_norm eval affine", [&](const std::vector<Tensor>& in) {
    return batch_norm(in[0], running_mean, running_var, in[1], in[2], false);
  }, {x, w, b});
  CHECK_GRADCHECK("batch_norm eval", [&](const std::vector<Tensor>& in) {
    return batch_norm(in[0], running_mean, running_var, Tensor(), Tensor(), false);
  }, {leaf({4, 3}, 8)});
}

TEST_CASE("gradcheck: batch_norm_relu with a residual, training and eval") {
  Tensor x = leaf({3, 2, 2, 2}, 12), w = leaf({2}, 13), b = leaf({2}, 14), residual = leaf({3, 2, 2, 2}, 15);
  Tensor running_mean = tensor({0.3, -0.2}), running_var = tensor({0.9, 1.4});
  for (bool training : {true, false}) {
    CHECK_GRADCHECK(std::string("batch_norm_relu ") + (training ? "train" : "eval"),
                    [&](const std::vector<Tensor>& in) {
                      return batch_norm_relu(in[0], raw::clone(running_mean), raw::clone(running_var), in[1], in[2],
                                             training, 0.1, 1e-5, in[3]);
                    },
                    {x, w, b, residual});
  }
}

TEST_CASE("gradcheck: layer_norm with and without affine") {
  Tensor x = leaf({2, 3, 4}, 9), w = leaf({3, 4}, 10), b = leaf({3, 4}, 11);
  CHECK_GRADCHECK("layer_norm affine over [3, 4]", [](const std::vector<Tensor>& in) {
    return layer_norm(in[0], {3, 4}, in[1], in[2]);
  }, {x, w, b});
  CHECK_GRADCHECK("layer_norm over [4]", [](const std::vector<Tensor>& in) {
    return layer_norm(in[0], {4}, Tensor(), Tensor(), 1e-3);
  }, {leaf({3, 4}, 12)});
  CHECK_GRADCHECK("layer_norm weight only", [](const std::vector<Tensor>& in) {
    return layer_norm(in[0], {5}, in[1]);
  }, {leaf({2, 5}, 13), leaf({5}, 14)});
}

TEST_CASE("gradcheck: dropout with a fixed generator seed") {
  // A fresh generator per call gives the same mask in every forward gradcheck makes.
  CHECK_GRADCHECK("dropout p=0.4", [](const std::vector<Tensor>& in) {
    Generator gen(21);
    return dropout(in[0], 0.4, true, &gen);
  }, {leaf({3, 5}, 15)});
}

TEST_CASE("gradcheck: embedding with repeated indices and padding_idx") {
  Tensor w = leaf({5, 3}, 16);
  Tensor idx = tensor({0, 2, 2, 4, 1, 2}).reshape({2, 3});
  CHECK_GRADCHECK("embedding", [](const std::vector<Tensor>& in) { return embedding(in[0], in[1]); }, {w, idx});
  // The padding row is read in the forward but gets no gradient by definition, so finite differences would
  // disagree there: here padding_idx names a row the indices avoid (the skip is tested in tests/tensor).
  CHECK_GRADCHECK("embedding padding_idx=3, i32 indices", [](const std::vector<Tensor>& in) {
    return embedding(in[0], in[1], 3);
  }, {w, raw::to(idx, DType::i32)});
}
