// The CPU's bfloat16 kernels built on AVX512_BF16 dot products (vdpbf16ps, float32 accumulation): batched
// GEMM and the stride-1 convolutions. tensor/cpu/linalg.cpp and conv.cpp call them for bfloat16 tensors when
// dot_available(); otherwise bfloat16 runs on the float32 kernels (operands widened, results rounded once).
// Compiled from bf16_gemm.cpp/bf16_conv.cpp where the compiler can target AVX512_BF16, from
// bf16_unavailable.cpp elsewhere.
#pragma once

#include "tensor/cpu/conv_im2col.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu::bf16 {

// True when bfloat16 products run on these kernels: the build has them and the CPU has AVX512_BF16 and executes
// vdpbf16ps faster than float32 FMAs (not on Intel cores: bf16_gemm.cpp). SYNCGRAD_CPU_BF16_DOT=1 chooses them
// wherever the CPU has AVX512_BF16, =0 never (the float32 path); any other value is a ValueError. Decided once.
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
