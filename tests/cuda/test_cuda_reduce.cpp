// CUDA conformance: reductions (sum/mean over any dims, max/min/argmax with ties and NaN, var/std,
// logsumexp) and softmax/log_softmax against the CPU with the same random inputs, and their gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;

namespace {

// Sums combine in another order on the GPU: compare with an absolute slack of the size of the terms.
Tolerance sum_tolerance(DType dtype) {
  Tolerance tol = tolerance_for(dtype);
  tol.abs = std::max(tol.abs, tol.rel * 10);
  return tol;
}

}  // namespace

TEST_CASE("sum and mean over any dims of strided inputs") {
  const std::vector<Shape> dim_sets = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}, {-1, 0}};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (const Shape& dims : dim_sets) {
      for (Layout layout : kAllLayouts) {
        for (bool keepdim : {false, true}) {
          check_op(
              "sum " + shape_str(dims) + " " + dtype_name(dtype), {random_values({5, 6, 7}, dtype, 1)},
              [&](const std::vector<Tensor>& v) { return raw::sum(v[0], dims, keepdim); }, layout,
              sum_tolerance(dtype));
        }
        check_op(
            "mean " + shape_str(dims) + " " + dtype_name(dtype), {random_values({5, 6, 7}, dtype, 2)},
            [&](const std::vector<Tensor>& v) { return raw::mean(v[0], dims); }, layout, sum_tolerance(dtype));
      }
    }
  }
  for (DType dtype : {DType::i64, DType::i32, DType::u8, DType::boolean}) {
    check_op(
        std::string("integer sum ") + dtype_name(dtype), {random_values({4, 9, 3}, dtype, 3)},
        [](const std::vector<Tensor>& v) {
          return raw::sum(v[0], {0, 2});
        },
        Layout::transposed);
    check_op(std::string("sum to int32 ") + dtype_name(dtype), {random_values({4, 9}, dtype, 4)},
             [](const std::vector<Tensor>& v) { return raw::sum(v[0], {1}, false, DType::i32); });
  }
  // Long rows (a block per output) and many short columns (a thread per output); a broadcast input.
  check_op("sum of long rows", {random_values({3, 50000}, DType::f32, 5)},
           [](const std::vector<Tensor>& v) { return raw::sum(v[0], {1}); }, Layout::contiguous, {1e-5, 1e-3});
  check_op("sum over the outer dim of a wide tensor", {random_values({300, 5000}, DType::f32, 6)},
           [](const std::vector<Tensor>& v) { return raw::sum(v[0], {0}); }, Layout::contiguous, {1e-5, 1e-4});
  check_op("sum of a broadcast view", {random_values({1, 7}, DType::f32, 7)}, [](const std::vector<Tensor>& v) {
    return raw::sum(raw::expand(v[0], {9, 7}), {0});
  });
  check_op(
      "sum over 10 dims", {random_values(Shape(10, 2), DType::f64, 8)},
      [](const std::vector<Tensor>& v) {
        return raw::sum(v[0], {0, 2, 4, 6, 8});
      },
      Layout::strided);
}

TEST_CASE("max, min, argmax and argmin along a dim, with ties and NaN") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8}) {
    // Small integers: many ties, and the first extremum must win on both devices.
    const Tensor x = raw::to(random_values({6, 7, 5}, DType::i32, 9), dtype);
    for (int64_t dim : {0, 1, 2}) {
      for (bool largest : {true, false}) {
        const std::string what =
            std::string(largest ? "max" : "min") + " dim " + std::to_string(dim) + " " + dtype_name(dtype);
        check_op(
            what + " values", {x},
            [&](const std::vector<Tensor>& v) {
              return largest ? raw::max(v[0], dim).values : raw::min(v[0], dim).values;
            },
            Layout::transposed);
        check_op(
            what + " indices", {x},
            [&](const std::vector<Tensor>& v) {
              return largest ? raw::max(v[0], dim, true).indices : raw::min(v[0], dim, true).indices;
            },
            Layout::strided);
      }
    }
    check_op(std::string("argmax flat ") + dtype_name(dtype), {x},
             [](const std::vector<Tensor>& v) { return raw::argmax(v[0]); });
    check_op(std::string("min of all ") + dtype_name(dtype), {x},
             [](const std::vector<Tensor>& v) { return raw::min(v[0]); });
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor with_nan = from_vector(std::vector<double>{1, nan, 3, nan, 7, 2, 7, -1, 0, 4, 4, nan}, {3, 4});
  for (int64_t dim : {0, 1}) {
    check_op("argmax with NaN", {raw::to(with_nan, DType::f32)},
             [dim](const std::vector<Tensor>& v) { return raw::argmax(v[0], dim); });
    check_op("max with NaN", {with_nan}, [dim](const std::vector<Tensor>& v) { return raw::max(v[0], dim).values; });
  }
  check_op("long rows", {random_values({2, 70000}, DType::f32, 10)},
           [](const std::vector<Tensor>& v) { return raw::argmin(v[0], 1); });
}

TEST_CASE("var, std and logsumexp over dims") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (const Shape& dims : std::vector<Shape>{{}, {1}, {0, 2}}) {
      for (int64_t correction : {0, 1}) {
        check_op(
            "var " + shape_str(dims) + " " + dtype_name(dtype), {random_values({4, 9, 6}, dtype, 11)},
            [&](const std::vector<Tensor>& v) { return raw::var(v[0], dims, correction); }, Layout::transposed,
            sum_tolerance(dtype));
      }
      check_op(
          "std " + shape_str(dims) + " " + dtype_name(dtype), {random_values({4, 9, 6}, dtype, 12)},
          [&](const std::vector<Tensor>& v) { return raw::std(v[0], dims, 1, true); }, Layout::strided,
          sum_tolerance(dtype));
      check_op(
          "logsumexp " + shape_str(dims) + " " + dtype_name(dtype), {random_values({4, 9, 6}, dtype, 13, 4.0)},
          [&](const std::vector<Tensor>& v) {
            return raw::logsumexp(v[0], dims.empty() ? Shape{0, 1, 2} : dims);
          },
          Layout::transposed, sum_tolerance(dtype));
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  check_op("logsumexp of infinite rows", {from_vector(std::vector<double>{-inf, -inf, 1, inf, 2, 3}, {3, 2})},
           [](const std::vector<Tensor>& v) { return raw::logsumexp(v[0], {1}); });
}

TEST_CASE("softmax and log_softmax along every dim, forward and backward") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (int64_t dim : {0, 1, 2}) {
      for (bool log : {false, true}) {
        const std::string what =
            std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim) + " " + dtype_name(dtype);
        const Tensor x = random_values({5, 6, 7}, dtype, 14, 3.0);
        const Tensor y = check_op(
            what, {x},
            [&](const std::vector<Tensor>& v) { return log ? raw::log_softmax(v[0], dim) : raw::softmax(v[0], dim); },
            Layout::transposed);
        const Tensor out = log ? raw::log_softmax(x, dim) : raw::softmax(x, dim);
        check_op(
            what + " backward", {random_values({5, 6, 7}, dtype, 15), out},
            [&](const std::vector<Tensor>& v) { return raw::softmax_backward(v[0], v[1], dim, log); }, Layout::strided,
            sum_tolerance(dtype));
      }
    }
  }
  check_op("softmax of a 1000-wide row in f16 computed in f32", {random_values({3, 1000}, DType::f16, 16)},
           [](const std::vector<Tensor>& v) { return raw::softmax(v[0], 1, DType::f32); });
}

TEST_CASE("gradients of the reductions and softmax") {
  const Tolerance tol = sum_tolerance(DType::f32);
  const Tensor x = random_values({4, 5, 6}, DType::f32, 17);
  check_grad(
      "sum", {x},
      [](const std::vector<Tensor>& v) {
        return sum(v[0], {0, 2});
      },
      tol);
  check_grad(
      "mean", {x}, [](const std::vector<Tensor>& v) { return mean(v[0], {1}, true); }, tol);
  check_grad(
      "max dim", {x}, [](const std::vector<Tensor>& v) { return max(v[0], 1).values; }, tol);
  check_grad(
      "min all (ties)", {raw::to(random_values({4, 5}, DType::i32, 18), DType::f32)},
      [](const std::vector<Tensor>& v) { return min(v[0]); }, tol);
  check_grad(
      "var", {x}, [](const std::vector<Tensor>& v) { return var(v[0], {2}); }, tol);
  check_grad(
      "std", {x},
      [](const std::vector<Tensor>& v) {
        return syncgrad::std(v[0], {0, 1});
      },
      tol);
  check_grad(
      "logsumexp", {x}, [](const std::vector<Tensor>& v) { return logsumexp(v[0], {1}); }, tol);
  check_grad(
      "softmax", {x}, [](const std::vector<Tensor>& v) { return softmax(v[0], 1); }, tol);
  check_grad(
      "log_softmax", {x}, [](const std::vector<Tensor>& v) { return log_softmax(v[0], 2); }, tol);
}
