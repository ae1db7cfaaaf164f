// batch_norm_relu (relu(batch_norm(x) + residual) in one pass) against the three separate ops: the same output
// bit for bit, the same running statistics and gradients, in every floating dtype, training and eval, with and
// without affine parameters or a residual, on a non-contiguous input; the backward reading the relu's bit mask
// (runs of 1 to 130 elements, an output changed in place after the forward); BatchNorm2d::forward_relu; the errors.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }

Tensor random_of(const Shape& shape, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return raw::to(randn(shape, {.dtype = DType::f64}, &gen), dtype);
}

struct Run {
  std::vector<double> out, running_mean, running_var, grad_x, grad_w, grad_b, grad_residual;
};

// One forward and backward, fused or through batch_norm, add and relu.
Run run(bool fused, DType dtype, bool training, bool affine, bool with_residual, const Tensor& x_source) {
  const int64_t c = x_source.size(1);
  Tensor x = raw::clone(raw::to(x_source, dtype)).requires_grad_();  // a leaf of its own, also in float64
  Tensor w = affine ? random_of({c}, 2, dtype).requires_grad_() : Tensor();
  Tensor b = affine ? random_of({c}, 3, dtype).requires_grad_() : Tensor();
  Tensor residual = with_residual ? random_of(x_source.sizes(), 4, dtype).requires_grad_() : Tensor();
  Tensor running_mean = random_of({c}, 5, DType::f32);
  Tensor running_var = raw::add(raw::abs(random_of({c}, 6, DType::f32)), 0.5);
  Tensor y = fused ? batch_norm_relu(x, running_mean, running_var, w, b, training, 0.1, 1e-5, residual)
                   : relu(with_residual ? add(batch_norm(x, running_mean, running_var, w, b, training), residual)
                                        : batch_norm(x, running_mean, running_var, w, b, training));
  y.backward(random_of(x_source.sizes(), 7, dtype));
  Run r{values(y), values(running_mean), values(running_var), values(x.grad()), {}, {}, {}};
  if (affine) r.grad_w = values(w.grad()), r.grad_b = values(b.grad());
  if (with_residual) r.grad_residual = values(residual.grad());
  CHECK(y.dtype() == dtype);
  CHECK(x.grad().dtype() == dtype);
  return r;
}

// Calls f, which must throw E with a message holding every part.
template <class E, class F>
void check_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    FAIL("no exception");
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts) {
      INFO(msg);
      CHECK(msg.find(part) != std::string::npos);
    }
  }
}

void check_equal(const std::vector<double>& fused, const std::vector<double>& separate, const char* what) {
  INFO(std::string(what));
  REQUIRE(fused.size() == separate.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO("element " << i);
    CHECK(fused[i] == separate[i]);
  }
}

}  // namespace

TEST_CASE("batch_norm_relu equals relu(batch_norm(x) + residual): output, running stats and gradients") {
  // (6, 3, 5, 4) covers runs longer than a vector and a ragged tail; (64, 5) the (N, C) layout (runs of one);
  // (2, 3, 8, 8) runs of exactly one mask word; (3, 2, 130) runs of two words and a 2-bit third.
  for (const Shape& shape : {Shape{6, 3, 5, 4}, Shape{64, 5}, Shape{2, 3, 8, 8}, Shape{3, 2, 130}}) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      for (bool training : {true, false}) {
        for (bool affine : {true, false}) {
          for (bool with_residual : {true, false}) {
            INFO(shape_str(shape) << " " << std::string(dtype_name(dtype)) << " training " << training
                                  << " affine " << affine
                                  << " residual " << with_residual);
            const Tensor x = random_of(shape, 1, DType::f64);
            const Run fused = run(true, dtype, training, affine, with_residual, x);
            const Run separate = run(false, dtype, training, affine, with_residual, x);
            check_equal(fused.out, separate.out, "output");
            check_equal(fused.running_mean, separate.running_mean, "running_mean");
            check_equal(fused.running_var, separate.running_var, "running_var");
            check_equal(fused.grad_x, separate.grad_x, "grad input");
            check_equal(fused.grad_w, separate.grad_w, "grad weight");
            check_equal(fused.grad_b, separate.grad_b, "grad bias");
            check_equal(fused.grad_residual, separate.grad_residual, "grad residual");
          }
        }
      }
    }
  }
}

TEST_CASE("batch_norm_relu: outputs at zero stop exactly their gradient, the others pass it on") {
  // Outputs below zero (about half) get no gradient into the residual; the others pass grad_out unchanged.
  Tensor x = random_of({8, 2, 3, 3}, 11, DType::f32).requires_grad_();
  Tensor residual = random_of({8, 2, 3, 3}, 12, DType::f32).requires_grad_();
  Tensor y = batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, residual);
  Tensor grad_out = random_of({8, 2, 3, 3}, 13, DType::f32);
  y.backward(grad_out);
  const std::vector<double> out = values(y), g = values(grad_out), gr = values(residual.grad());
  int zeros_seen = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i] >= 0.0);
    CHECK(gr[i] == (out[i] > 0.0 ? g[i] : 0.0));
    zeros_seen += out[i] == 0.0;
  }
  CHECK(zeros_seen > static_cast<int>(out.size()) / 4);
}

TEST_CASE("batch_norm_relu's backward reads the mask its forward kept, not the output") {
  // Changing the output in place after the forward leaves the gradients as they were: what reached zero is in
  // the mask. (Saving the output instead would refuse the backward as modified in place.)
  const Tensor grad_out = random_of({4, 3, 70}, 52, DType::f32);
  std::vector<double> expected, got;
  for (bool overwrite : {false, true}) {
    Tensor x = random_of({4, 3, 70}, 51, DType::f32).requires_grad_();
    Tensor y = batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
    if (overwrite) raw::fill_(y, 1.0);
    y.backward(grad_out);
    (overwrite ? got : expected) = values(x.grad());
  }
  check_equal(got, expected, "grad input after the output was overwritten");
}

TEST_CASE("raw::batch_norm_relu_backward refuses a mask of another shape, naming both, and nothing to mask with") {
  const Tensor x = random_of({2, 3, 70}, 53, DType::f32);
  const raw::BatchNormResult r =
      raw::batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, true);
  REQUIRE(r.relu_mask.defined());
  CHECK(r.relu_mask.sizes() == Shape{2, 3, 2});
  const Tensor wrong = zeros({2, 3, 1}, {.dtype = DType::i64});
  check_error<ShapeError>(
      [&] {
        raw::batch_norm_relu_backward(ones({2, 3, 70}), r.output, wrong, x, r.save_mean, r.save_invstd, Tensor(),
                                      true, {}, false);
      },
      {"relu_mask", "[2, 3, 1]", "[2, 3, 2]", "[2, 3, 70]"});
  check_error<ValueError>(
      [&] {
        raw::batch_norm_relu_backward(ones({2, 3, 70}), Tensor(), Tensor(), x, r.save_mean, r.save_invstd, Tensor(),
                                      true, {}, false);
      },
      {"batch_norm_relu_backward", "neither", "relu_mask"});
}

TEST_CASE("batch_norm_relu on a non-contiguous input and residual") {
  Tensor x = raw::transpose(random_of({3, 4, 5}, 21, DType::f32), 0, 2);          // (5, 4, 3)
  Tensor residual = raw::transpose(random_of({3, 4, 5}, 22, DType::f32), 0, 2);   // (5, 4, 3)
  Tensor fused = batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, residual);
  Tensor separate = relu(add(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), residual));
  check_equal(values(fused), values(separate), "output");
}

TEST_CASE("BatchNorm2d::forward_relu matches relu(forward(x) + residual), buffers included") {
  for (bool training : {true, false}) {
    INFO("training " << training);
    nn::BatchNorm2d fused_layer(3), separate_layer(3);
    fused_layer.train(training);
    separate_layer.train(training);
    for (int step = 0; step < 2; ++step) {
      Tensor x = random_of({4, 3, 2, 2}, 30 + step, DType::f32);
      Tensor residual = random_of({4, 3, 2, 2}, 40 + step, DType::f32);
      check_equal(values(fused_layer.forward_relu(x, residual)),
                  values(relu(add(separate_layer.forward(x), residual))), "output");
      check_equal(values(fused_layer.forward_relu(x)), values(relu(separate_layer.forward(x))), "output, no residual");
    }
    check_equal(values(fused_layer.running_mean), values(separate_layer.running_mean), "running_mean");
    check_equal(values(fused_layer.running_var), values(separate_layer.running_var), "running_var");
    CHECK(fused_layer.num_batches_tracked.item<int64_t>() == separate_layer.num_batches_tracked.item<int64_t>());
  }
}

TEST_CASE("batch_norm_relu errors name the residual and a hint") {
  Tensor x = zeros({4, 3, 2});
  auto with_residual = [&](const Tensor& residual) {
    batch_norm_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, residual);
  };
  check_error<ShapeError>([&] { with_residual(zeros({4, 3, 3})); },
                          {"batch_norm_relu", "[4, 3, 3]", "[4, 3, 2]", "must match"});
  check_error<DTypeError>([&] { with_residual(zeros({4, 3, 2}, {.dtype = DType::f64})); },
                          {"batch_norm_relu", "float64", ".to()"});
  nn::BatchNorm2d layer(3);
  CHECK_THROWS_AS(layer.forward_relu(zeros({2, 4, 2, 2})), ShapeError);
  // A residual that the separate add would broadcast is refused too, naming the layer and both shapes.
  check_error<ShapeError>([&] { layer.forward_relu(zeros({2, 3, 2, 2}), zeros({3, 1, 1})); },
                          {"BatchNorm2d.forward_relu", "[3, 1, 1]", "[2, 3, 2, 2]"});
}
