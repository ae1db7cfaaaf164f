// CUDA conformance: batch norm (training with running statistics, eval), batch norm + relu (composed on the
// device) and layer norm forward and backward,
// max / average / adaptive average pooling with padding, dilation and ceil_mode windows, and their gradients,
// against the CPU with the same random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;

namespace {

// Statistics sum many terms in another order: an absolute slack of the size of the terms.
Tolerance norm_tolerance(DType dtype) {
  Tolerance tol = tolerance_for(dtype);
  tol.abs = std::max(tol.abs, tol.rel * 10);
  return tol;
}

// The tensors flattened, converted to f64 and concatenated: several results compared at once.
Tensor flat_f64(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flat;
  for (const Tensor& t : parts) flat.push_back(raw::reshape(raw::to(t, DType::f64), {t.numel()}));
  return raw::cat(flat, 0);
}

}  // namespace

TEST_CASE("batch norm forward in training and eval, with the running statistics updated alike") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        const Tensor weight = affine ? random_values({4}, DType::f32, 2) : Tensor();
        const Tensor bias = affine ? random_values({4}, DType::f32, 3) : Tensor();
        const Tensor running_var = raw::add(raw::abs(random_values({4}, DType::f32, 5)), 0.5);
        const std::string what = std::string("batch_norm ") + dtype_name(dtype) + (training ? " training" : " eval");
        for (const Shape& shape : {Shape{6, 4}, Shape{3, 4, 5, 7}}) {
          // Output, then the statistics saved and the running statistics after the call.
          check_op(
              what, {random_values(shape, dtype, 1), random_values({4}, DType::f32, 4), running_var},
              [&](const std::vector<Tensor>& v) {
                Tensor mean = v[1], var = v[2];
                const Device device = v[0].device();
                const raw::BatchNormResult r =
                    raw::batch_norm(v[0], mean, var, affine ? raw::to(weight, device) : Tensor(),
                                    affine ? raw::to(bias, device) : Tensor(), training, 0.1, 1e-5);
                return flat_f64({r.output, r.save_mean, r.save_invstd, mean, var});
              },
              Layout::contiguous, norm_tolerance(dtype));
        }
      }
    }
  }
}

TEST_CASE("batch norm and layer norm backward") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Tolerance tol = norm_tolerance(dtype);
    for (bool training : {true, false}) {
      const Tensor x = random_values({5, 3, 4, 2}, dtype, 6);
      const Tensor weight = random_values({3}, dtype, 7);
      const raw::BatchNormResult forward = raw::batch_norm(x, zeros({3}, {.dtype = dtype}), ones({3}, {.dtype = dtype}),
                                                           weight, Tensor(), training, 0.1, 1e-5);
      check_op(
          std::string("batch_norm_backward ") + dtype_name(dtype),
          {random_values({5, 3, 4, 2}, dtype, 8), x, forward.save_mean, forward.save_invstd, weight},
          [&](const std::vector<Tensor>& v) {
            const raw::NormGrads g = raw::batch_norm_backward(v[0], v[1], v[2], v[3], v[4], training,
                                                              {.input = true, .weight = dtype, .bias = dtype});
            return flat_f64({g.grad_input, g.grad_weight, g.grad_bias});
          },
          Layout::contiguous, tol);
    }
    const Tensor x = random_values({6, 4, 10}, dtype, 9);
    const Tensor weight = random_values({4, 10}, dtype, 10), bias = random_values({4, 10}, dtype, 11);
    check_op(
        std::string("layer_norm ") + dtype_name(dtype), {x, weight, bias},
        [](const std::vector<Tensor>& v) {
          const raw::LayerNormResult r = raw::layer_norm(v[0], {4, 10}, v[1], v[2], 1e-5);
          return flat_f64({r.output, r.save_mean, r.save_rstd});
        },
        Layout::transposed, tol);
    const raw::LayerNormResult rows = raw::layer_norm(x, {10}, raw::select(weight, 0, 0), Tensor(), 1e-5);
    check_op(
        std::string("layer_norm_backward ") + dtype_name(dtype),
        {random_values({6, 4, 10}, dtype, 12), x, rows.save_mean, rows.save_rstd, raw::select(weight, 0, 0)},
        [&](const std::vector<Tensor>& v) {
          const raw::NormGrads g = raw::layer_norm_backward(v[0], v[1], {10}, v[2], v[3], v[4],
                                                            {.input = true, .weight = dtype, .bias = dtype});
          return flat_f64({g.grad_input, g.grad_weight, g.grad_bias});
        },
        Layout::contiguous, tol);
  }
  const Tolerance tol = norm_tolerance(DType::f32);
  check_grad(
      "batch_norm gradient",
      {random_values({4, 3, 5}, DType::f32, 13), random_values({3}, DType::f32, 14),
       random_values({3}, DType::f32, 15)},
      [](const std::vector<Tensor>& v) { return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); }, tol);
  // The device has no fused kernel: batch_norm_relu composes batch norm, add and relu there, against the CPU's
  // fused kernel.
  check_grad(
      "batch_norm_relu gradient",
      {random_values({4, 3, 5}, DType::f32, 19), random_values({3}, DType::f32, 20),
       random_values({3}, DType::f32, 21), random_values({4, 3, 5}, DType::f32, 22)},
      [](const std::vector<Tensor>& v) {
        return batch_norm_relu(v[0], Tensor(), Tensor(), v[1], v[2], true, 0.1, 1e-5, v[3]);
      },
      tol);
  check_grad(
      "layer_norm gradient",
      {random_values({4, 3, 8}, DType::f32, 16), random_values({8}, DType::f32, 17),
       random_values({8}, DType::f32, 18)},
      [](const std::vector<Tensor>& v) { return layer_norm(v[0], {8}, v[1], v[2]); }, tol);
}

TEST_CASE("max, average and adaptive average pooling, forward and backward") {
  struct Case {
    Size2 kernel, stride, padding, dilation;
    bool ceil_mode;
  };
  const Case cases[] = {{2, 2, 0, 1, false},
                        {3, 2, 1, 1, false},
                        {3, 2, 1, 1, true},
                        {{3, 2}, {1, 2}, {1, 0}, {2, 1}, false},
                        {2, 3, 1, 1, true}};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    const Tensor x = random_values({2, 3, 9, 8}, dtype, 19);
    for (const Case& c : cases) {
      const std::string what = std::string(dtype_name(dtype)) + " kernel " + size2_str(c.kernel) + " stride " +
                               size2_str(c.stride) + (c.ceil_mode ? " ceil" : "");
      check_op(
          "max_pool2d " + what, {x},
          [&](const std::vector<Tensor>& v) {
            auto [out, indices] =
                raw::max_pool2d_with_indices(v[0], c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
            return flat_f64({out, indices});
          },
          Layout::transposed, tolerance_for(DType::f64));
      auto [out, indices] = raw::max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
      check_op("max_pool2d_backward " + what, {random_values(out.sizes(), dtype, 20), indices},
               [&](const std::vector<Tensor>& v) { return raw::max_pool2d_backward(v[0], v[1], x.sizes()); });
      for (bool include_pad : {true, false}) {
        const Pool2dParams params{c.kernel, c.stride, c.padding, 1, c.ceil_mode, include_pad};
        check_op(
            "avg_pool2d " + what, {x},
            [&](const std::vector<Tensor>& v) {
              return raw::avg_pool2d(v[0], c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
            },
            Layout::strided);
        const Tensor avg = raw::avg_pool2d(x, c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
        check_op("avg_pool2d_backward " + what, {random_values(avg.sizes(), dtype, 21)},
                 [&](const std::vector<Tensor>& v) { return raw::avg_pool2d_backward(v[0], x.sizes(), params); });
      }
    }
    for (Size2 size : {Size2(1), Size2(3, 5), Size2(9, 8), Size2(4, 3)}) {
      check_op(
          std::string("adaptive_avg_pool2d ") + dtype_name(dtype) + " " + size2_str(size), {x},
          [size](const std::vector<Tensor>& v) { return raw::adaptive_avg_pool2d(v[0], size); }, Layout::transposed);
      check_op(std::string("adaptive_avg_pool2d_backward ") + dtype_name(dtype) + " " + size2_str(size),
               {random_values({2, 3, size.h, size.w}, dtype, 22)},
               [&](const std::vector<Tensor>& v) { return raw::adaptive_avg_pool2d_backward(v[0], x.sizes()); });
    }
  }
  const Tolerance tol = tolerance_for(DType::f32);
  const Tensor x = random_values({2, 2, 7, 6}, DType::f32, 23);
  check_grad(
      "max_pool2d gradient", {x}, [](const std::vector<Tensor>& v) { return max_pool2d(v[0], 3, 2, 1); }, tol);
  check_grad(
      "avg_pool2d gradient", {x}, [](const std::vector<Tensor>& v) { return avg_pool2d(v[0], 2, 1, 1, true, false); },
      tol);
  check_grad(
      "adaptive_avg_pool2d gradient", {x},
      [](const std::vector<Tensor>& v) {
        return adaptive_avg_pool2d(v[0], {3, 4});
      },
      tol);
}
