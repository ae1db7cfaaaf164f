// The bfloat16 conv2d weight gradient as one product per chunk of images on oneDNN's bfloat16 matmul (AMX
// tiles where usable), for stride-1 convolutions without dilation or groups, on the sizes where it measured
// faster than oneDNN's own weight-gradient convolution (the .cpp says which):
//   dW^T (K, C_out) += col (K, J) @ grad_out^T (J, C_out)     K = C_in * kH * kW, J = images * OH * OW
// col is the chunk's column matrix (im2col, bfloat16, built with masked vector copies), grad_out^T the chunk's
// output gradient laid side by side; the sum stays float32 across chunks and is rounded once. On the CNN's conv2
// (64 x 32 x 14 x 14, 5x5) this took 2.3-2.5 ms where oneDNN's own AMX weight-gradient convolution took 3.9-4.0
// (docs/BENCHMARKS.md, "bfloat16 on AMX").
#pragma once

#include "tensor/cpu/conv_im2col.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu {

// Whether bf16_conv_weight_gemm takes this shape: stride 1, no dilation, one group, more than one input channel,
// kernels at most 16 wide, and the sizes where it measured faster (at least 32 output channels, planes of at most
// 256 outputs, at most 1M weights).
bool bf16_conv_weight_gemm_supported(const ConvShape& s);

// grad_weight (C_out, C_in, kH, kW) from grad_out (N, C_out, OH, OW) and input (N, C_in, H, W), all bfloat16 and
// contiguous, on a supported shape. Returns false, doing nothing, where oneDNN refuses the product.
bool bf16_conv_weight_gemm(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                           const ConvShape& s);

}  // namespace syncgrad::cpu
