// CPU conv2d kernels. float32 3x3 convolutions with stride 1 and padding 1 run the Winograd kernels of
// winograd.h; other stride-1 convolutions without dilation run the implicit GEMMs of conv_implicit.h.
// Other convolutions build column matrices: float32 ones with large products for chunks of images at once,
// multiplied on oneDNN's matmul (forward_onednn, backward_input_onednn below); the rest one image (and group) at
// a time, so they stay in L2, multiplied with the register-tiled GEMM of conv_gemm.h, rows padded to whole
// vectors (Pp = OH * OW rounded up to kLanes), the padding columns never read back. Per image:
//   forward:      out (C_out_g, Pp) = W (C_out_g, K) * col (K, Pp) + bias          K = C_in_g * kH * kW
//   grad input:   dcol (K, Pp) = W^T (K, C_out_g) * grad_out (C_out_g, Pp), then col2im
//   grad weight:  dW^T (K, cop) += col (K, J) * grad_out^T (J, cop) over chunks of images, J = their OH * OW
//                 columns, cop = C_out_g padded to vectors; transposed into grad_weight at the end.
// Scratch buffers are per thread and reused across calls. float32 and float64 run natively. bfloat16 runs on
// oneDNN's convolution primitives where bfloat16 goes to oneDNN (onednn_bf16_chosen: where AMX-BF16 is usable,
// onednn_conv.h); elsewhere bfloat16 stride-1 convolutions that float32 does not run with Winograd run on the
// AVX512_BF16 kernels of bf16_conv.cpp where they are chosen (bf16::dot_available), those it does run with
// Winograd run on its kernels with bfloat16 activations (on_bf16_winograd); other float16/bfloat16 cases are
// converted to float32 and back.
#include <algorithm>
#include <mutex>
#include <vector>

#include "tensor/cpu/bf16_conv_weight_gemm.h"
#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/conv_im2col.h"
#include "tensor/cpu/conv_implicit.h"
#include "tensor/cpu/onednn_conv.h"
#include "tensor/cpu/onednn_gemm.h"
#include "tensor/cpu/visit.h"
#include "tensor/cpu/winograd.h"
#include "tensor/cpu/transpose_tiles.h"
#include "tensor/check.h"
#include "tensor/ops/conv.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"

namespace syncgrad::cpu {
namespace {

using conv_gemm::kLanes;
using conv_gemm::StridedA;

ConvShape conv_shape(const Shape& input, const Shape& weight, const Shape& out, const Conv2dParams& p) {
  return {input[0], input[1], input[2], input[3], weight[0], weight[2], weight[3], out[2], out[3], p.groups, p};
}

bool unit_stride(const ConvShape& s) { return s.p.stride == Size2(1) && s.p.dilation == Size2(1); }

// float32 convolutions on the im2col path whose per-image product has 4M multiply-adds or more (ResNet-18's
// stride-2 3x3 layers: 19M) multiply on oneDNN's matmul over chunks of images at once: one column matrix (K, J)
// for J = images * OH * OW columns, so that a layer with a 4x4 or 8x8 output still makes a wide product
// (ResNet-18's shapes ran at 42-102 GFLOP/s per image on the register tiles, 62-130 per image on oneDNN and
// 130-149 in chunks: docs/DESIGN.md, "Stride-2 convolutions on oneDNN"). Smaller ones (ResNet-20's stride-2 layers, 1x1 projections: 1-2M)
// were as fast or faster on the tiles, and float64 stays there.
constexpr int64_t kChunkBytesOneDNN = int64_t{3} << 19;  // 1.5 MiB of column matrix per product
constexpr int64_t kMinMultiplyAddsOneDNN = int64_t{1} << 22;

template <class T>
bool im2col_on_onednn(const ConvShape& s) {
  return std::is_same_v<T, float> && s.c_out_group() * s.col_rows() * s.out_plane() >= kMinMultiplyAddsOneDNN;
}

int64_t images_per_chunk(int64_t bytes, int64_t k, int64_t p, int64_t element_size) {
  return std::max<int64_t>(1, bytes / (k * p * element_size));
}

// Runs body(first_image, images) over each thread's share of the batch in chunks of at most `chunk` images.
void for_image_chunks(int64_t batch, int64_t chunk, const std::function<void(int64_t, int64_t)>& body) {
  for_images(batch, [&](int64_t first, int64_t last) {
    for (int64_t n0 = first; n0 < last; n0 += chunk) body(n0, std::min(chunk, last - n0));
  });
}

// c (m, n), rows ldc apart, (+)= a (m, k) @ b (k, n) on oneDNN, operands given as (pointer, row stride, column
// stride). A float32 matmul in plain strides always has an implementation (oneDNN's reference one at worst).
void onednn_product(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                    bool accumulate = false) {
  SYNCGRAD_CHECK(onednn_sgemm(m, n, k, a, b, c, ldc, accumulate), Error, "conv2d: oneDNN has no float32 matmul for (",
                 m, ", ", k, ") @ (", k, ", ", n, ") with strides (", a.row_stride, ", ", a.col_stride, ") and (",
                 b.row_stride, ", ", b.col_stride, ")");
}

// Per chunk and group: col (K, J) = the chunk's receptive fields, ys (C_out_g, J) = W (C_out_g, K) * col, then
// each image's (C_out_g, OH * OW) block + bias copied out (a one-image chunk writes into y directly).
void forward_onednn(const float* x, const float* wt, const float* b, float* y, const ConvShape& s) {
  const int64_t k = s.col_rows(), p = s.out_plane(), cog = s.c_out_group();
  const int64_t chunk = images_per_chunk(kChunkBytesOneDNN, k, p, sizeof(float));
  for_image_chunks(s.batch, chunk, [&](int64_t n0, int64_t images) {
    const int64_t j = images * p;
    float* col = scratch<float, 0>(k * chunk * p);
    float* ys = scratch<float, 1>(cog * chunk * p);
    for (int64_t g = 0; g < s.groups; ++g) {
      for (int64_t i = 0; i < images; ++i) {
        im2col(x + ((n0 + i) * s.c_in + g * s.c_in_group()) * s.in_plane(), col + i * p, j, s);
      }
      float* y_first = y + (n0 * s.c_out + g * cog) * p;
      const bool direct = images == 1;
      onednn_product(cog, j, k, {wt + g * cog * k, k, 1}, {col, j, 1}, direct ? y_first : ys, j);
      for (int64_t i = 0; i < images; ++i) {
        float* y_g = y + ((n0 + i) * s.c_out + g * cog) * p;
        for (int64_t c = 0; c < cog; ++c) {
          const float bias = b != nullptr ? b[g * cog + c] : 0.0f;
          const float* from = direct ? y_g + c * p : ys + c * j + i * p;
          for (int64_t q = 0; q < p; ++q) y_g[c * p + q] = from[q] + bias;
        }
      }
    }
  });
}

// Per chunk and group: gys (C_out_g, J) gathers the chunk's output gradients (a one-image chunk reads them in
// place), dcol (K, J) = W^T (K, C_out_g) * gys, folded back onto each image's input planes.
void backward_input_onednn(const float* gy, const float* wt, float* gx, const ConvShape& s) {
  const int64_t k = s.col_rows(), p = s.out_plane(), cog = s.c_out_group();
  const int64_t chunk = images_per_chunk(kChunkBytesOneDNN, k, p, sizeof(float));
  for_image_chunks(s.batch, chunk, [&](int64_t n0, int64_t images) {
    const int64_t j = images * p;
    float* dcol = scratch<float, 0>(k * chunk * p);
    float* gys = scratch<float, 1>(cog * chunk * p);
    for (int64_t g = 0; g < s.groups; ++g) {
      const float* gy_first = gy + (n0 * s.c_out + g * cog) * p;
      if (images > 1) {
        for (int64_t i = 0; i < images; ++i) {
          const float* gy_g = gy + ((n0 + i) * s.c_out + g * cog) * p;
          for (int64_t c = 0; c < cog; ++c) std::copy(gy_g + c * p, gy_g + (c + 1) * p, gys + c * j + i * p);
        }
      }
      onednn_product(k, j, cog, {wt + g * cog * k, 1, k}, {images > 1 ? gys : gy_first, j, 1}, dcol, j);
      for (int64_t i = 0; i < images; ++i) {
        col2im(dcol + i * p, j, gx + ((n0 + i) * s.c_in + g * s.c_in_group()) * s.in_plane(), s);
      }
    }
  });
}

template <class T>
void forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvShape& s) {
  const T* x = input.data_ptr<T>();
  const T* wt = weight.data_ptr<T>();
  const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* y = out.data_ptr<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (winograd::supported(s)) return winograd::forward(x, wt, b, y, s);
  }
  if (unit_stride(s)) {
    implicit_conv::forward(x, wt, b, y, s);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (im2col_on_onednn<T>(s)) return forward_onednn(x, wt, b, y, s);
  }
  const int64_t k = s.col_rows(), p = s.out_plane(), pp = padded<T>(p), cog = s.c_out_group();
  // Output rows of a whole number of vectors are written in place; otherwise through a padded buffer.
  const bool direct = pp == p;
  for_images(s.batch, [&](int64_t first, int64_t last) {
    T* col = scratch<T, 0>(k * pp);
    T* staged = direct ? nullptr : scratch<T, 1>(cog * pp);
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        im2col(x + (n * s.c_in + g * s.c_in_group()) * s.in_plane(), col, pp, s);
        T* y_g = y + (n * s.c_out + g * cog) * p;  // (C_out_g, OH * OW)
        T* dst = direct ? y_g : staged;
        conv_gemm::gemm<T, 8, 3>(cog, pp, k, StridedA<T>{wt + g * cog * k, k, 1}, col, pp, dst, pp,
                                 {.row_bias = b != nullptr ? b + g * cog : nullptr});
        if (!direct) {
          for (int64_t c = 0; c < cog; ++c) std::copy(staged + c * pp, staged + c * pp + p, y_g + c * p);
        }
      }
    }
  });
}

template <class T>
void backward_input(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight, const ConvShape& s) {
  const T* gy = grad_out.data_ptr<T>();
  const T* wt = weight.data_ptr<T>();
  T* gx = grad_input.data_ptr<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (winograd::supported(s)) return winograd::backward_input(gy, wt, gx, s);
  }
  if (unit_stride(s) && implicit_conv::backward_input_supported(s)) {
    implicit_conv::backward_input(gy, wt, gx, s);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (im2col_on_onednn<T>(s)) return backward_input_onednn(gy, wt, gx, s);
  }
  const int64_t k = s.col_rows(), p = s.out_plane(), pp = padded<T>(p), cog = s.c_out_group();
  const bool direct = pp == p;
  for_images(s.batch, [&](int64_t first, int64_t last) {
    T* dcol = scratch<T, 0>(k * pp);
    T* staged = direct ? nullptr : scratch<T, 1>(cog * pp);
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* gy_g = gy + (n * s.c_out + g * cog) * p;  // (C_out_g, OH * OW)
        if (!direct) {
          for (int64_t c = 0; c < cog; ++c) std::copy(gy_g + c * p, gy_g + (c + 1) * p, staged + c * pp);
        }
        conv_gemm::gemm<T, 8, 3>(k, pp, cog, StridedA<T>{wt + g * cog * k, 1, k}, direct ? gy_g : staged, pp,
                                 dcol, pp);
        col2im(dcol, pp, gx + (n * s.c_in + g * s.c_in_group()) * s.in_plane(), s);
      }
    }
  });
}

// dW^T (K, cop) (+)= col (K, J) * gy^T (J, cop), the first C_out_g columns: on oneDNN where chosen, else on
// tiles of 4 vectors when C_out_g allows, else 2.
template <class T>
void weight_gemm(int64_t k, int64_t j, int64_t cog, int64_t cop, const T* col, const T* gy_t, T* dw_t,
                 bool accumulate, bool on_onednn) {
  if constexpr (std::is_same_v<T, float>) {
    if (on_onednn) return onednn_product(k, cog, j, {col, j, 1}, {gy_t, cop, 1}, dw_t, cop, accumulate);
  }
  if (cop % (4 * kLanes<T>) == 0) {
    conv_gemm::gemm<T, 6, 4>(k, cop, j, StridedA<T>{col, j, 1}, gy_t, cop, dw_t, cop, {.accumulate = accumulate});
  } else {
    conv_gemm::gemm<T, 12, 2>(k, cop, j, StridedA<T>{col, j, 1}, gy_t, cop, dw_t, cop, {.accumulate = accumulate});
  }
}

template <class T>
void backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input, const ConvShape& s) {
  const T* gy = grad_out.data_ptr<T>();
  const T* x = input.data_ptr<T>();
  T* total = grad_weight.data_ptr<T>();  // (C_out, K)
  if constexpr (std::is_same_v<T, float>) {
    if (winograd::supported(s)) return winograd::backward_weight(gy, x, total, s);
  }
  if (unit_stride(s)) {
    implicit_conv::backward_weight(gy, x, total, s);
    return;
  }
  const int64_t k = s.col_rows(), p = s.out_plane(), cog = s.c_out_group(), cop = padded<T>(cog);
  // Images per GEMM: as many as keep the column matrix within ~384 KiB for the tiles, 1.5 MiB for oneDNN.
  const bool on_onednn = im2col_on_onednn<T>(s);
  const int64_t chunk_bytes = on_onednn ? kChunkBytesOneDNN : int64_t{384} << 10;
  const int64_t chunk = images_per_chunk(chunk_bytes, k, p, sizeof(T));
  std::fill(total, total + s.c_out * k, T(0));
  std::mutex merge;
  for_images(s.batch, [&](int64_t first, int64_t last) {
    if (first == last) return;
    const int64_t j_max = std::min(chunk, last - first) * p;
    T* col = scratch<T, 0>(k * j_max);
    T* gy_t = scratch<T, 1>(j_max * cop);
    T* dw_t = scratch<T, 2>(s.groups * k * cop);  // per group (K, cop)
    for (int64_t n0 = first; n0 < last; n0 += chunk) {
      const int64_t images = std::min(chunk, last - n0), j = images * p;
      for (int64_t g = 0; g < s.groups; ++g) {
        for (int64_t i = 0; i < images; ++i) {
          const int64_t n = n0 + i;
          im2col(x + (n * s.c_in + g * s.c_in_group()) * s.in_plane(), col + i * p, j, s);
          transpose(gy + (n * s.c_out + g * cog) * p, cog, p, p, gy_t + i * p * cop, cop);
        }
        weight_gemm<T>(k, j, cog, cop, col, gy_t, dw_t + g * k * cop, n0 != first, on_onednn);
      }
    }
    std::lock_guard<std::mutex> lock(merge);
    for (int64_t g = 0; g < s.groups; ++g) {
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t c = 0; c < cog; ++c) total[(g * cog + c) * k + r] += dw_t[(g * k + r) * cop + c];
      }
    }
  });
}

Tensor float32_or_undefined(const Tensor& t) { return t.defined() ? raw::to(t, DType::f32) : Tensor(); }

// Calls run<T>(result, operands) with T = float or double; half types run on float32 copies of the operands
// and the float32 result is converted into `result`.
template <class Run>
void dispatch(const char* op, const Tensor& result, std::initializer_list<Tensor> operands, Run run) {
  visit_floating(result.dtype(), op, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      run.template operator()<T>(result, std::vector<Tensor>(operands));
    } else {
      std::vector<Tensor> converted;
      for (const Tensor& t : operands) converted.push_back(float32_or_undefined(t));
      Tensor result_f32 = empty(result.sizes(), {.dtype = DType::f32});
      run.template operator()<float>(result_f32, converted);
      raw::copy_(result, result_f32);
    }
  });
}

// Whether a conv kernel writing `result` tries oneDNN's primitives first (onednn_conv.h): bfloat16 where the
// matmuls go to oneDNN too, by default where AMX-BF16 is usable; shapes oneDNN has only reference kernels for
// fall through to the paths below.
bool bf16_on_onednn(const Tensor& result) { return result.dtype() == DType::bf16 && onednn_bf16_chosen(); }

// Whether a conv kernel writing `result` runs on the bfloat16 dot-product kernels: stride 1, where the kernels
// are chosen, and not where float32 runs Winograd, whose 6.25x (5x5) or 4x (3x3; 2.25x on images of at most 4x4)
// fewer multiplications beat vdpbf16ps's twice the FMA's rate.
bool on_bf16_dot(const Tensor& result, const ConvShape& s) {
  return result.dtype() == DType::bf16 && unit_stride(s) && bf16::dot_available() && !winograd::supported(s);
}

// Whether a bfloat16 conv kernel writing `result` runs on the Winograd kernels with bfloat16 activations, which
// widen and round them on the fly: the float32 Winograd convolution of the converted operands, bit for bit,
// without full-size float32 copies of the activations and of the result (ResNet-20 under autocast spent ~10% of
// a step on those). Only the filters, the bias and the weight gradient (small) are converted.
bool on_bf16_winograd(const Tensor& result, const ConvShape& s) {
  return result.dtype() == DType::bf16 && winograd::supported(s);
}

using winograd::BF16;

// The elements of a bfloat16 operand (the conv ops give a kernel operands of the result's dtype).
BF16* bf16_data(const Tensor& t) {
  SYNCGRAD_CHECK(t.dtype() == DType::bf16, Error, "conv2d: a bfloat16 kernel got a ", dtype_name(t.dtype()),
                 " operand");
  return static_cast<BF16*>(t.data_ptr());
}

void conv2d_kernel(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& params) {
  const ConvShape s = conv_shape(input.sizes(), weight.sizes(), out.sizes(), params);
  if (bf16_on_onednn(out) && onednn_conv_forward(out, input, weight, bias, s)) return;
  if (on_bf16_dot(out, s)) return bf16::conv_forward(out, input, weight, bias, s);
  if (on_bf16_winograd(out, s)) {
    const Tensor w = raw::to(weight, DType::f32), b = float32_or_undefined(bias);
    return winograd::forward(bf16_data(input), w.data_ptr<float>(), b.defined() ? b.data_ptr<float>() : nullptr,
                             bf16_data(out), s);
  }
  dispatch("conv2d", out, {input, weight, bias}, [&]<class T>(const Tensor& y, const std::vector<Tensor>& in) {
    forward<T>(y, in[0], in[1], in[2], s);
  });
}

void conv2d_backward_input_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                                  const Conv2dParams& params) {
  const ConvShape s = conv_shape(grad_input.sizes(), weight.sizes(), grad_out.sizes(), params);
  if (bf16_on_onednn(grad_input) && onednn_conv_backward_input(grad_input, grad_out, weight, s)) return;
  if (on_bf16_dot(grad_input, s) && implicit_conv::backward_input_supported(s)) {
    return bf16::conv_backward_input(grad_input, grad_out, weight, s);
  }
  if (on_bf16_winograd(grad_input, s)) {
    return winograd::backward_input(bf16_data(grad_out), raw::to(weight, DType::f32).data_ptr<float>(),
                                    bf16_data(grad_input), s);
  }
  dispatch("conv2d_backward", grad_input, {grad_out, weight},
           [&]<class T>(const Tensor& gx, const std::vector<Tensor>& in) { backward_input<T>(gx, in[0], in[1], s); });
}

void conv2d_backward_weight_kernel(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                                   const Conv2dParams& params) {
  const ConvShape s = conv_shape(input.sizes(), grad_weight.sizes(), grad_out.sizes(), params);
  // oneDNN's AMX weight gradient with one input channel per group (the CNN's conv1: K = 25 per output channel)
  // took 2.05 ms where the float32 kernels on widened operands take 1.53 (syncgrad-bench conv --amp bf16).
  if (bf16_on_onednn(grad_weight) && s.c_in_group() > 1) {
    if (bf16_conv_weight_gemm_supported(s) && bf16_conv_weight_gemm(grad_weight, grad_out, input, s)) return;
    if (onednn_conv_backward_weight(grad_weight, grad_out, input, s)) return;
  }
  if (on_bf16_dot(grad_weight, s)) return bf16::conv_backward_weight(grad_weight, grad_out, input, s);
  if (on_bf16_winograd(grad_weight, s)) {
    const Tensor gw = empty(grad_weight.sizes(), {.dtype = DType::f32});
    winograd::backward_weight(bf16_data(grad_out), bf16_data(input), gw.data_ptr<float>(), s);
    raw::copy_(grad_weight, gw);
    return;
  }
  dispatch("conv2d_backward", grad_weight, {grad_out, input},
           [&]<class T>(const Tensor& gw, const std::vector<Tensor>& in) { backward_weight<T>(gw, in[0], in[1], s); });
}

const KernelRegistrar reg_conv2d(kernels::conv2d, DeviceType::kCPU, &conv2d_kernel);
const KernelRegistrar reg_conv2d_backward_input(kernels::conv2d_backward_input, DeviceType::kCPU,
                                                &conv2d_backward_input_kernel);
const KernelRegistrar reg_conv2d_backward_weight(kernels::conv2d_backward_weight, DeviceType::kCPU,
                                                 &conv2d_backward_weight_kernel);

}  // namespace
}  // namespace syncgrad::cpu
