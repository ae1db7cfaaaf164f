// Winograd kernels for float32 3x3 convolutions with stride 1 and padding 1 (the body of ResNets): 2.25x fewer
// multiplications than a direct convolution, for the forward pass and both gradients (tensor/cpu/conv.cpp picks
// them where supported() says so). Per chunk of images the 2x2 output tiles are transformed 16 at a time
// (winograd_tiles.h), then 16 GEMMs (conv_gemm.h) combine the channels:
//   forward:      M_k (C_out, T) = U_k (C_out, C_in) * V_k (C_in, T), then Y = A^T M A per tile
//   grad input:   the forward with grad_out as input and the flipped, transposed filters
//   grad weight:  S_k (C_out, C_in) += E_k (C_out, T) * V_k^T (T, C_in) over all tiles, then C^T S C
// k = one of the 16 positions of a transformed 4x4 tile, T = tiles of the chunk (one per 2x2 output block). Results
// differ from the direct convolution by rounding only (relative 1e-6 for typical sizes).
#pragma once

#include "tensor/cpu/conv_im2col.h"

namespace syncgrad::cpu::winograd {

// 3x3 kernel, stride 1, padding 1, dilation 1, one group, even height and width, at least 8 input and output
// channels, and tensors small enough for 32-bit offsets.
bool supported(const ConvShape& s);

// y (N, C_out, H, W) = conv(x (N, C_in, H, W), w (C_out, C_in, 3, 3)) + bias (C_out; may be null).
void forward(const float* x, const float* w, const float* bias, float* y, const ConvShape& s);
// gx (N, C_in, H, W) from gy (N, C_out, H, W) and w.
void backward_input(const float* gy, const float* w, float* gx, const ConvShape& s);
// gw (C_out, C_in, 3, 3) = the weight gradient summed over the batch, from gy and x.
void backward_weight(const float* gy, const float* x, float* gw, const ConvShape& s);

}  // namespace syncgrad::cpu::winograd
