// CUDA conformance: the GEMM (mm, bmm, matmul with broadcast batches, addmm, linear) over transposed,
// strided and broadcast operands of every supported dtype, its gradients; the fused SGD / Adam / AdamW steps
// and the gradient unscale against the CPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;

namespace {

// GEMM results sum K products in another order (and f16/bf16 on tensor cores round their inputs alike but
// accumulate in another order): an absolute slack of the size of the terms.
Tolerance gemm_tolerance(DType dtype) {
  Tolerance tol = tolerance_for(dtype);
  tol.abs = std::max(tol.abs, tol.rel * 20);
  return tol;
}

}  // namespace

TEST_CASE("mm, bmm, matmul, addmm and linear on transposed, strided and broadcast operands") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32}) {
    const Tolerance tol = gemm_tolerance(dtype);
    for (Layout layout : kAllLayouts) {
      const std::string what = std::string(dtype_name(dtype)) + " ";
      check_op(
          what + "mm", {random_values({7, 5}, dtype, 1), random_values({5, 9}, dtype, 2)},
          [](const std::vector<Tensor>& v) { return raw::mm(v[0], v[1]); }, layout, tol);
      check_op(
          what + "mm with a row and a column", {random_values({1, 6}, dtype, 3), random_values({6, 1}, dtype, 4)},
          [](const std::vector<Tensor>& v) { return raw::mm(v[0], v[1]); }, layout, tol);
      check_op(
          what + "bmm", {random_values({3, 4, 6}, dtype, 5), random_values({3, 6, 2}, dtype, 6)},
          [](const std::vector<Tensor>& v) { return raw::bmm(v[0], v[1]); }, layout, tol);
      check_op(
          what + "matmul broadcast batch", {random_values({2, 1, 4, 3}, dtype, 7), random_values({5, 3, 6}, dtype, 8)},
          [](const std::vector<Tensor>& v) { return raw::matmul(v[0], v[1]); }, layout, tol);
      check_op(
          what + "matmul vector", {random_values({4, 3, 5}, dtype, 9), random_values({5}, dtype, 10)},
          [](const std::vector<Tensor>& v) { return raw::matmul(v[0], v[1]); }, layout, tol);
    }
    if (!is_floating(dtype)) continue;
    check_op(
        std::string(dtype_name(dtype)) + " addmm",
        {random_values({4}, dtype, 11), random_values({3, 6}, dtype, 12), random_values({6, 4}, dtype, 13)},
        [](const std::vector<Tensor>& v) { return raw::addmm(v[0], v[1], v[2], 0.5, -2.0); }, Layout::transposed, tol);
    check_op(
        std::string(dtype_name(dtype)) + " linear",
        {random_values({2, 5, 8}, dtype, 14), random_values({3, 8}, dtype, 15), random_values({3}, dtype, 16)},
        [](const std::vector<Tensor>& v) { return raw::linear(v[0], v[1], v[2]); }, Layout::strided, tol);
  }
  check_op(
      "bmm of 4 dims whose batch strides do not merge",
      {random_values({3, 4, 5, 6}, DType::f32, 17), random_values({4, 3, 6, 2}, DType::f32, 18)},
      [](const std::vector<Tensor>& v) { return raw::matmul(v[0], raw::transpose(v[1], 0, 1)); }, Layout::contiguous,
      gemm_tolerance(DType::f32));
  check_op(
      "a matrix strided in both directions is copied",
      {random_values({6, 8}, DType::f32, 19), random_values({4, 5}, DType::f32, 20)},
      [](const std::vector<Tensor>& v) { return raw::mm(raw::slice(raw::slice(v[0], 0, 0, 6, 2), 1, 0, 8, 2), v[1]); },
      Layout::contiguous, gemm_tolerance(DType::f32));
}

TEST_CASE("gradients of the matrix products") {
  const Tolerance tol = gemm_tolerance(DType::f32);
  check_grad(
      "mm", {random_values({4, 6}, DType::f32, 21), random_values({6, 3}, DType::f32, 22)},
      [](const std::vector<Tensor>& v) { return mm(v[0], v[1]); }, tol);
  check_grad(
      "bmm", {random_values({2, 4, 6}, DType::f32, 23), random_values({2, 6, 3}, DType::f32, 24)},
      [](const std::vector<Tensor>& v) { return bmm(v[0], v[1]); }, tol);
  check_grad(
      "matmul broadcast", {random_values({3, 4, 5}, DType::f32, 25), random_values({5, 2}, DType::f32, 26)},
      [](const std::vector<Tensor>& v) { return matmul(v[0], v[1]); }, tol);
  check_grad(
      "linear",
      {random_values({5, 7}, DType::f32, 27), random_values({4, 7}, DType::f32, 28),
       random_values({4}, DType::f32, 29)},
      [](const std::vector<Tensor>& v) { return linear(v[0], v[1], v[2]); }, tol);
  check_grad(
      "addmm",
      {random_values({1, 3}, DType::f64, 30), random_values({4, 5}, DType::f64, 31),
       random_values({5, 3}, DType::f64, 32)},
      [](const std::vector<Tensor>& v) { return addmm(v[0], v[1], v[2], 2.0, 0.5); }, gemm_tolerance(DType::f64));
}

TEST_CASE("fused SGD and Adam/AdamW steps on strided parameters match the CPU") {
  const std::vector<SGDStepArgs> sgd_variants = {
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01, .first_step = true},
      {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true, .maximize = true},
  };
  const std::vector<AdamStepArgs> adam_variants = {
      {.lr = 1e-2, .step = 1},
      {.lr = 1e-2, .weight_decay = 0.1, .step = 7},
      {.lr = 1e-2, .weight_decay = 0.1, .decoupled_weight_decay = true, .amsgrad = true, .maximize = true, .step = 3},
  };
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (Layout layout : kAllLayouts) {
      for (const SGDStepArgs& args : sgd_variants) {
        check_op(
            std::string("sgd_step ") + dtype_name(dtype),
            {random_values({6, 5}, dtype, 33), random_values({6, 5}, dtype, 34), random_values({6, 5}, dtype, 35)},
            [&](const std::vector<Tensor>& v) {
              raw::sgd_step_(v[0], v[1], v[2], args);
              return raw::cat({v[0], v[2]}, 0);
            },
            layout);
      }
      for (const AdamStepArgs& args : adam_variants) {
        const Tensor second = raw::abs(random_values({6, 5}, dtype, 38));
        check_op(
            std::string("adam_step ") + dtype_name(dtype),
            {random_values({6, 5}, dtype, 36), random_values({6, 5}, dtype, 37), random_values({6, 5}, dtype, 39),
             second, raw::mul(second, 1.5)},
            [&](const std::vector<Tensor>& v) {
              raw::adam_step_(v[0], v[1], v[2], v[3], v[4], args);
              return raw::cat({v[0], v[2], v[3], v[4]}, 0);
            },
            layout);
      }
    }
  }
}

TEST_CASE("gradient unscale scales in place and finds inf and NaN") {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    const Tensor finite = random_values({40, 3}, dtype, 40);
    Tensor a = place(finite, kCuda0), b = place(finite, kCuda0, Layout::transposed);
    CHECK_FALSE(raw::unscale_grads_({a, b}, 0.25));
    CHECK_EMPTY(mismatch(a, raw::mul(finite, 0.25)));
    CHECK_EMPTY(mismatch(b, raw::mul(finite, 0.25)));
    Tensor with_inf = place(finite, kCuda0);
    raw::fill_(raw::select(raw::select(with_inf, 0, 17), 0, 1), std::numeric_limits<double>::infinity());
    CHECK(raw::unscale_grads_({a, with_inf}, 0.5));
  }
}
