// CUDA conformance: conv2d forward, backward input and backward weight (cuDNN on the GPU) with stride,
// padding, dilation, groups and bias for every floating dtype against the CPU, and its gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;

namespace {

// Sums of C_in * kH * kW products in another order: an absolute slack of the size of the terms.
Tolerance conv_tolerance(DType dtype) {
  Tolerance tol = tolerance_for(dtype);
  tol.abs = std::max(tol.abs, tol.rel * 20);
  return tol;
}

}  // namespace

TEST_CASE("conv2d and its two backward passes match the CPU") {
  const Conv2dParams cases[] = {{}, {2, 1, 1, 1}, {{1, 2}, {2, 0}, {2, 1}, 1}, {1, 1, 1, 2}, {2, 1, 1, 4}};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Tolerance tol = conv_tolerance(dtype);
    for (const Conv2dParams& p : cases) {
      const int64_t c_in = 4, c_out = 8;
      const Tensor input = random_values({2, c_in, 9, 7}, dtype, 1);
      const Tensor weight = random_values({c_out, c_in / p.groups, 3, 2}, dtype, 2, 0.5);
      const Tensor bias = random_values({c_out}, dtype, 3);
      const std::string what = std::string(dtype_name(dtype)) + " stride " + size2_str(p.stride) + " padding " +
                               size2_str(p.padding) + " dilation " + size2_str(p.dilation) + " groups " +
                               std::to_string(p.groups);
      const Tensor out = check_op(
          "conv2d " + what, {input, weight, bias},
          [&](const std::vector<Tensor>& v) {
            return raw::conv2d(v[0], v[1], v[2], p.stride, p.padding, p.dilation, p.groups);
          },
          Layout::contiguous, tol);
      check_op(
          "conv2d without bias, strided input " + what, {input, weight},
          [&](const std::vector<Tensor>& v) {
            return raw::conv2d(v[0], v[1], Tensor(), p.stride, p.padding, p.dilation, p.groups);
          },
          Layout::strided, tol);
      check_op(
          "conv2d_backward_input " + what, {random_values(out.sizes(), dtype, 4), weight},
          [&](const std::vector<Tensor>& v) { return raw::conv2d_backward_input(v[0], v[1], input.sizes(), p); },
          Layout::contiguous, tol);
      check_op(
          "conv2d_backward_weight " + what, {random_values(out.sizes(), dtype, 5), input},
          [&](const std::vector<Tensor>& v) { return raw::conv2d_backward_weight(v[0], v[1], weight.sizes(), p); },
          Layout::contiguous, tol);
    }
  }
  check_grad(
      "conv2d gradient",
      {random_values({2, 3, 6, 5}, DType::f32, 6), random_values({4, 3, 3, 3}, DType::f32, 7),
       random_values({4}, DType::f32, 8)},
      [](const std::vector<Tensor>& v) { return conv2d(v[0], v[1], v[2], 1, 1); }, conv_tolerance(DType::f32));
}
