// The CPU's bfloat16 kernels built on AVX512_BF16 dot products (vdpbf16ps, float32 accumulation): batched
// GEMM and the stride-1 convolutions. tensor/cpu/linalg.cpp and conv.cpp call them for bfloat16 tensors when
// dot_available(); otherwise bfloat16 runs through float32 copies. Compiled from bf16_gemm.cpp/bf16_conv.cpp
// where the compiler can target AVX512_BF16, from bf16_unavailable.cpp elsewhere.
#pragma once

#include "tensor/cpu/conv_im2col.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu::bf16 {

// True when this CPU executes AVX512_BF16 and the build has the kernels, unless the environment sets
// SYNCGRAD_CPU_BF16_DOT=0 (to run the float32 fallback, e.g. in tests).
bool dot_available();

// kernels::gemm for bfloat16: out (..., M, N) contiguous = beta * out + alpha * a @ b, with a (..., M, K) and
// b (..., K, N) expanded to out's batch, any strides.
void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta);

// The conv2d kernels for stride 1 without dilation (conv_implicit.h's cases), bfloat16, all contiguous.
void conv_forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const ConvShape& s);
void conv_backward_input(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight, const ConvShape& s);
void conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input, const ConvShape& s);

}  // namespace syncgrad::cpu::bf16
