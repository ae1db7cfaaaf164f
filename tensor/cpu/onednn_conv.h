// bfloat16 conv2d on oneDNN's convolution primitives: on CPUs with usable AMX-BF16 oneDNN runs them on the tiles
// (its jit/brgconv avx512_core_amx_bf16 kernels), 3-7x its own float32 kernels on ResNet's and the CNN's layers
// (docs/BENCHMARKS.md, "bfloat16 on AMX"). The tensors stay NCHW / OIHW; operands are reordered into the
// layouts the primitive chose (channels last, blocked weights) and results back, in per-thread buffers.
// float32 accumulation; the output, the input gradient and the weight gradient are each rounded once.
// Primitives are created once per shape and pass and kept.
#pragma once

#include "tensor/cpu/conv_im2col.h"
#include "tensor/tensor.h"

namespace syncgrad::cpu {

// out (N, C_out, OH, OW) = conv(input (N, C_in, H, W), weight (C_out, C_in / groups, kH, kW)) + bias (C_out, may
// be undefined); all bfloat16 and contiguous. Returns false, doing nothing, where oneDNN has only its reference
// implementation for this shape (or none).
bool onednn_conv_forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const ConvShape& s);

// grad_input (N, C_in, H, W) from grad_out (N, C_out, OH, OW) and weight; as onednn_conv_forward.
bool onednn_conv_backward_input(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                                const ConvShape& s);

// grad_weight (C_out, C_in / groups, kH, kW) from grad_out and input, summed over the batch in float32; as
// onednn_conv_forward.
bool onednn_conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                                 const ConvShape& s);

}  // namespace syncgrad::cpu
