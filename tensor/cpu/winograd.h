// Winograd kernels for float32 convolutions with 3x3 or 5x5 kernels, stride 1 and "same" padding (1 or 2): the
// body of ResNets and the bundled CNN's second layer. F(4x4, 3x3) needs 4x fewer multiplications than a direct
// convolution, F(2x2, 3x3) 2.25x, F(4x4, 5x5) 6.25x, for the forward pass and both gradients
// (tensor/cpu/conv.cpp picks them where supported() says so, on the tiles tile_side() picks). Per chunk of tiles
// the m x m output tiles (m = 2, 4) are transformed 16 at a time (winograd_tiles.h, winograd_transforms.h), then
// one GEMM per transformed position (conv_gemm.h; 36 or 16 for 3x3, 64 for 5x5) combines the channels:
//   forward:      M_k (C_out, T) = U_k (C_out, C_in) * V_k (C_in, T), then Y = A^T M A per tile
//   grad input:   the forward with grad_out as input and the flipped, transposed filters
//   grad weight:  S^T_k (C_in, C_out) += V_k (C_in, T) * E^T_k (T, C_out) over all tiles, then C^T S C
// k = one position of a transformed (m + R - 1)^2 tile, T = tiles of the chunk (one per m x m output block).
// Results differ from the direct convolution by rounding only: relative 1e-7 to 9e-7 for F(2x2, 3x3), 8e-7 to
// 1.3e-5 for F(4x4, 3x3) (growing with the channels), ~5e-6 (forward) to ~1e-5 (weight gradient) for F(4x4, 5x5)
// (tests/tensor/test_winograd.cpp; docs/BENCHMARKS.md for wider layers).
#pragma once

#include "tensor/cpu/conv_im2col.h"

namespace Eigen {
struct bfloat16;  // Eigen/Core's; the kernels only take pointers to it here
}

namespace syncgrad::cpu::winograd {

using BF16 = Eigen::bfloat16;

// Whether the kernels have a tiling of R x R kernels (R = `kernel`) on tile x tile output blocks: F(2x2, 3x3),
// F(4x4, 3x3) and F(4x4, 5x5).
bool has_tiling(int64_t kernel, int64_t tile);

// The output tile side the kernels use for a shape: 4 for 5x5 kernels; for 3x3 4, or 2 on images of at most 4x4
// (one tile each: nothing shared between tiles' patches).
int64_t tile_side(const ConvShape& s);

// 3x3 kernel with padding 1 and at least 8 input and output channels, or 5x5 with padding 2 and at least 4 input
// channels; stride 1, dilation 1, one group, `tile` one of the kernel's tilings, and tensors small enough for
// 32-bit offsets. Any image size: tiles that stick out of the image read zeros and write only their part inside
// it. The one-argument form asks for the tile side tile_side() picks.
bool supported(const ConvShape& s, int64_t tile);
bool supported(const ConvShape& s);

// y (N, C_out, H, W) = conv(x (N, C_in, H, W), w (C_out, C_in, R, R)) + bias (C_out; may be null). These three
// throw ValueError where !supported(s, tile). The activations (x, y, and the gradients gy, gx) are A = float or
// bfloat16 (BF16): bfloat16 ones are widened to float32 as the kernels read them and rounded (to nearest even)
// as they write them, which gives bit for bit what converting them, convolving in float32 and rounding the
// result gives; filters, bias and the weight gradient are float32.
template <class A>
void forward(const A* x, const float* w, const float* bias, A* y, const ConvShape& s, int64_t tile);
// gx (N, C_in, H, W) from gy (N, C_out, H, W) and w.
template <class A>
void backward_input(const A* gy, const float* w, A* gx, const ConvShape& s, int64_t tile);
// gw (C_out, C_in, R, R) = the weight gradient summed over the batch, from gy and x.
template <class A>
void backward_weight(const A* gy, const A* x, float* gw, const ConvShape& s, int64_t tile);

// The same on the tiles tile_side() picks.
template <class A>
void forward(const A* x, const float* w, const float* bias, A* y, const ConvShape& s);
template <class A>
void backward_input(const A* gy, const float* w, A* gx, const ConvShape& s);
template <class A>
void backward_weight(const A* gy, const A* x, float* gw, const ConvShape& s);

}  // namespace syncgrad::cpu::winograd
