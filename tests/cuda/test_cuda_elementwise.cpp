// CUDA conformance: unary, binary, comparison, where and clamp kernels against the CPU with the same random
// inputs, in contiguous, transposed and strided layouts, broadcast and in place; and their gradients.
#include <doctest/doctest.h>

#include <string>

#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;

namespace {

const DType kFloating[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
const DType kNumeric[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8};
const UnaryOp kUnaryOps[] = {UnaryOp::neg,     UnaryOp::abs,  UnaryOp::relu,  UnaryOp::square,   UnaryOp::sign,
                             UnaryOp::exp,     UnaryOp::log,  UnaryOp::log1p, UnaryOp::sqrt,     UnaryOp::rsqrt,
                             UnaryOp::sigmoid, UnaryOp::tanh, UnaryOp::gelu,  UnaryOp::gelu_tanh};
const BinaryOp kBinaryOps[] = {BinaryOp::add, BinaryOp::sub,     BinaryOp::mul,    BinaryOp::div,
                               BinaryOp::pow, BinaryOp::maximum, BinaryOp::minimum};
const CompareOp kCompareOps[] = {CompareOp::eq,          CompareOp::ne,         CompareOp::lt,
                                 CompareOp::le,          CompareOp::gt,         CompareOp::ge,
                                 CompareOp::logical_and, CompareOp::logical_or, CompareOp::logical_xor};

// Ops defined only for positive inputs get |x| + 0.1.
bool needs_positive(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::log1p || op == UnaryOp::sqrt || op == UnaryOp::rsqrt;
}

Tensor unary_input(UnaryOp op, DType dtype, uint64_t seed) {
  Tensor x = random_values({6, 9}, DType::f64, seed);
  if (needs_positive(op)) x = raw::add(raw::abs(x), 0.1);
  return raw::to(x, dtype);
}

}  // namespace

TEST_CASE("unary ops match the CPU for every floating dtype and layout") {
  for (DType dtype : kFloating) {
    for (UnaryOp op : kUnaryOps) {
      for (Layout layout : kAllLayouts) {
        check_op(
            std::string(unary_op_name(op)) + " " + dtype_name(dtype), {unary_input(op, dtype, 1)},
            [op](const std::vector<Tensor>& v) { return raw::unary(op, v[0]); }, layout);
      }
    }
  }
}

TEST_CASE("numeric unary ops on integers, and in place on a strided view") {
  for (DType dtype : {DType::i64, DType::i32, DType::u8}) {
    for (UnaryOp op : {UnaryOp::neg, UnaryOp::abs, UnaryOp::relu, UnaryOp::square, UnaryOp::sign}) {
      check_op(
          std::string(unary_op_name(op)) + " " + dtype_name(dtype), {random_values({4, 5}, dtype, 2)},
          [op](const std::vector<Tensor>& v) { return raw::unary(op, v[0]); }, Layout::transposed);
    }
  }
  for (UnaryOp op : {UnaryOp::relu, UnaryOp::tanh, UnaryOp::exp}) {
    check_op(
        std::string(unary_op_name(op)) + "_ in place", {random_values({5, 8}, DType::f32, 3)},
        [op](const std::vector<Tensor>& v) {
          raw::unary_(op, v[0]);
          return v[0];
        },
        Layout::strided);
  }
  // Integer input to a floating-only op: converted to float first, as on the CPU.
  check_op("exp of int64", {random_values({3, 3}, DType::i64, 4)},
           [](const std::vector<Tensor>& v) { return raw::exp(v[0]); });
}

TEST_CASE("unary gradient kernels match the CPU") {
  for (DType dtype : kFloating) {
    for (UnaryOp op : kUnaryOps) {
      const Tensor x = unary_input(op, dtype, 5);
      const Tensor saved = unary_backward_uses_result(op) ? raw::unary(op, x) : x;
      check_op(
          std::string(unary_op_name(op)) + " backward " + dtype_name(dtype), {random_values({6, 9}, dtype, 6), saved},
          [op](const std::vector<Tensor>& v) { return raw::unary_backward(op, v[0], v[1]); }, Layout::transposed);
    }
  }
}

TEST_CASE("binary ops broadcast over strided operands of every numeric dtype") {
  for (DType dtype : kNumeric) {
    for (BinaryOp op : kBinaryOps) {
      for (Layout layout : kAllLayouts) {
        const Tensor a = random_values({4, 1, 6}, dtype, 7), b = random_values({3, 6}, dtype, 8);
        check_op(
            std::string(binary_op_name(op)) + " " + dtype_name(dtype), {a, b},
            [op](const std::vector<Tensor>& v) { return raw::binary(op, v[0], v[1], binary_op_name(op)); }, layout,
            tolerance_for(is_floating(dtype) ? dtype : DType::f32));
      }
    }
  }
  for (BinaryOp op : {BinaryOp::add, BinaryOp::mul, BinaryOp::maximum, BinaryOp::minimum}) {
    check_op(std::string(binary_op_name(op)) + " bool",
             {random_values({5, 5}, DType::boolean, 9), random_values({5, 1}, DType::boolean, 10)},
             [op](const std::vector<Tensor>& v) { return raw::binary(op, v[0], v[1], binary_op_name(op)); });
  }
}

TEST_CASE("add with alpha, scalar operands, promotion and in-place updates of views") {
  for (DType dtype : {DType::f32, DType::f16, DType::i64}) {
    const Scalar alpha = is_floating(dtype) ? Scalar(-0.75) : Scalar(int64_t{3});
    check_op(
        std::string("add alpha ") + dtype_name(dtype),
        {random_values({7, 3}, dtype, 11), random_values({3}, dtype, 12)},
        [alpha](const std::vector<Tensor>& v) { return raw::add(v[0], v[1], alpha); }, Layout::transposed);
  }
  check_op("scalar on either side", {random_values({4, 4}, DType::f32, 13)},
           [](const std::vector<Tensor>& v) { return raw::add(raw::div(2.5, v[0]), raw::sub(v[0], 1.5)); });
  check_op(
      "int32 + float64 promotes", {random_values({4, 4}, DType::i32, 14), random_values({4}, DType::f64, 15)},
      [](const std::vector<Tensor>& v) { return raw::mul(v[0], v[1]); }, Layout::contiguous, tolerance_for(DType::f64));
  check_op(
      "in place into a transposed view", {random_values({6, 5}, DType::f32, 16), random_values({5}, DType::f32, 17)},
      [](const std::vector<Tensor>& v) {
        Tensor target = raw::transpose(raw::clone(raw::transpose(v[0], 0, 1)), 0, 1);
        raw::add_(target, v[1], 0.5);
        raw::mul_(target, v[1]);
        raw::div_(target, 4.0);
        return target;
      },
      Layout::strided);
  check_op(
      "10 unmergeable dims", {random_values(Shape(10, 2), DType::f32, 18), random_values(Shape(10, 2), DType::f32, 19)},
      [](const std::vector<Tensor>& v) {
        Tensor a = v[0], b = v[1];
        for (int64_t d = 0; d < 10; ++d) b = raw::transpose(b, d, 9 - d);
        return raw::add(raw::mul(a, b), a);
      },
      Layout::strided);
}

TEST_CASE("comparisons, logical connectives, where and clamp") {
  for (DType dtype : kNumeric) {
    for (CompareOp op : kCompareOps) {
      check_op(
          std::string(compare_op_name(op)) + " " + dtype_name(dtype),
          {random_values({3, 1, 4}, dtype, 20), random_values({5, 4}, dtype, 20 + static_cast<int>(op) % 2)},
          [op](const std::vector<Tensor>& v) { return raw::compare(op, v[0], v[1]); }, Layout::transposed);
    }
    check_op(
        std::string("where ") + dtype_name(dtype),
        {random_values({4, 6}, DType::boolean, 21), random_values({4, 1}, dtype, 22), random_values({6}, dtype, 23)},
        [](const std::vector<Tensor>& v) { return raw::where(v[0], v[1], v[2]); }, Layout::strided);
    check_op(
        std::string("clamp ") + dtype_name(dtype), {random_values({5, 6}, dtype, 24)},
        [](const std::vector<Tensor>& v) { return raw::clamp(v[0], Scalar(-1), Scalar(2)); }, Layout::transposed);
  }
  check_op("clamp with one bound, NaN passes", {random_values({8}, DType::f32, 25)}, [](const std::vector<Tensor>& v) {
    Tensor x = raw::div(v[0], raw::sub(v[0], v[0]));  // inf, -inf or NaN
    return raw::cat({raw::clamp(x, Scalar(0.5), std::nullopt), raw::clamp(v[0], std::nullopt, Scalar(0.25))}, 0);
  });
  check_op("logical_not", {random_values({9}, DType::i32, 26)},
           [](const std::vector<Tensor>& v) { return raw::logical_not(v[0]); });
}

TEST_CASE("gradients of the elementwise ops with broadcasting") {
  const Tolerance tol = tolerance_for(DType::f32);
  const Tensor a = random_values({3, 1, 4}, DType::f32, 27), b = random_values({2, 4}, DType::f32, 28);
  const Tensor positive = raw::add(raw::abs(random_values({3, 1, 4}, DType::f32, 29)), 0.5);
  check_grad(
      "add", {a, b}, [](const std::vector<Tensor>& v) { return add(v[0], v[1], 0.5); }, tol);
  check_grad(
      "sub", {a, b}, [](const std::vector<Tensor>& v) { return sub(v[0], v[1]); }, tol);
  check_grad(
      "mul", {a, b}, [](const std::vector<Tensor>& v) { return mul(v[0], v[1]); }, tol);
  check_grad(
      "div", {a, positive}, [](const std::vector<Tensor>& v) { return div(v[1], v[0]); }, tol);
  check_grad(
      "pow", {positive, b}, [](const std::vector<Tensor>& v) { return pow(v[0], v[1]); }, tol);
  check_grad(
      "maximum", {a, b}, [](const std::vector<Tensor>& v) { return maximum(v[0], v[1]); }, tol);
  check_grad(
      "minimum", {a, b}, [](const std::vector<Tensor>& v) { return minimum(v[0], v[1]); }, tol);
  check_grad(
      "where", {random_values({2, 4}, DType::boolean, 30), a, b},
      [](const std::vector<Tensor>& v) { return where(v[0], v[1], v[2]); }, tol);
  check_grad(
      "clamp", {a}, [](const std::vector<Tensor>& v) { return clamp(v[0], Scalar(-0.5), Scalar(0.5)); }, tol);
  check_grad(
      "neg abs relu square sign", {a},
      [](const std::vector<Tensor>& v) {
        return add(add(neg(v[0]), abs(v[0])), add(relu(v[0]), add(square(v[0]), sign(v[0]))));
      },
      tol);
  check_grad(
      "exp log log1p sqrt rsqrt", {positive},
      [](const std::vector<Tensor>& v) {
        return add(add(exp(v[0]), log(v[0])), add(log1p(v[0]), add(sqrt(v[0]), rsqrt(v[0]))));
      },
      tol);
  check_grad(
      "sigmoid tanh gelu", {a},
      [](const std::vector<Tensor>& v) {
        return add(add(sigmoid(v[0]), tanh(v[0])), add(gelu(v[0]), gelu(v[0], GeluApproximate::tanh)));
      },
      tol);
}
