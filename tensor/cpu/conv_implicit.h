// Implicit-GEMM conv2d kernels for stride 1 without dilation (tensor/cpu/conv.cpp picks them): no column
// matrix is built. Each image's group planes are copied into a zero border once; a GEMM then reads every
// receptive field in place through a table of k offsets (conv_gemm::OffsetA), with the channels as the vector
// dimension (padded to whole vectors: cop, cip) and the weights packed once per call. Per image and group:
//   forward:      out^T (OH*OW, cop) = fields of x (OH*OW, K) * W^T (K, cop) + bias, transposed into out
//   grad input:   gx^T (H*W, cip) = fields of grad_out bordered by kernel - 1 - padding (H*W, C_out_g*kH*kW)
//                 * flipped W (C_out_g*kH*kW, cip), transposed into grad_input (a full correlation)
//   grad weight:  dW^T (K, cop) += fields of x^T (K, J) * grad_out^T (J, cop), J = the OH*OW positions of a
//                 chunk of images, transposed into grad_weight at the end
// K = C_in_g * kH * kW. Tiles run along one output row (or one kernel row of taps), whose elements are
// consecutive in the bordered copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/conv_im2col.h"
#include "tensor/cpu/transpose_tiles.h"

namespace syncgrad::cpu::implicit_conv {

using conv_gemm::OffsetA;

// Geometry of a zero-bordered stack of planes (channels, h + 2 * pad_h, w + 2 * pad_w).
struct Bordered {
  int64_t channels, h, w, pad_h, pad_w;
  int64_t width() const { return w + 2 * pad_w; }
  int64_t plane() const { return (h + 2 * pad_h) * width(); }
  int64_t size() const { return channels * plane(); }
};

// Offsets of the kernel taps (c, ki, kj), in that order, inside a bordered stack.
inline std::vector<int64_t> tap_offsets(const Bordered& b, int64_t kh, int64_t kw) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(b.channels * kh * kw));
  for (int64_t c = 0; c < b.channels; ++c) {
    for (int64_t ki = 0; ki < kh; ++ki) {
      for (int64_t kj = 0; kj < kw; ++kj) offsets.push_back(c * b.plane() + ki * b.width() + kj);
    }
  }
  return offsets;
}

// y (N, C_out, OH, OW) = conv(x, w) + b; b may be null.
template <class T>
void forward(const T* x, const T* wt, const T* b, T* y, const ConvShape& s) {
  const int64_t cig = s.c_in_group(), cog = s.c_out_group(), k = s.col_rows(), p = s.out_plane();
  const int64_t cop = padded<T>(cog);
  const Bordered in{cig, s.h, s.w, s.p.padding.h, s.p.padding.w};
  const std::vector<int64_t> taps = tap_offsets(in, s.kh, s.kw);
  T* w_t = scratch<T, 4>(s.groups * k * cop);  // per group (K, cop)
  T* bias = scratch<T, 5>(s.groups * cop);
  for (int64_t g = 0; g < s.groups; ++g) {
    transpose(wt + g * cog * k, cog, k, k, w_t + g * k * cop, cop);
    for (int64_t c = 0; c < cop; ++c) bias[g * cop + c] = b != nullptr && c < cog ? b[g * cog + c] : T(0);
  }
  for_images(s.batch, [&](int64_t first, int64_t last) {
    T* bordered = scratch<T, 0>(in.size());
    T* y_t = scratch<T, 1>(p * cop);  // (OH * OW, cop)
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        copy_bordered(x + (n * s.c_in + g * cig) * s.in_plane(), cig, s.h, s.w, in.pad_h, in.pad_w, bordered);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          conv_gemm::gemm<T, 7, 2>(s.ow, cop, k, OffsetA<T>{bordered + oy * in.width(), taps.data()},
                                   w_t + g * k * cop, cop, y_t + oy * s.ow * cop, cop, {.col_bias = bias + g * cop});
        }
        transpose(y_t, p, cog, cop, y + (n * s.c_out + g * cog) * p, p);
      }
    }
  });
}

// The full correlation needs the border kernel - 1 - padding on each side.
inline bool backward_input_supported(const ConvShape& s) {
  return s.p.padding.h <= s.kh - 1 && s.p.padding.w <= s.kw - 1;
}

// gx (N, C_in, H, W) = the gradient of conv with respect to its input, from gy (N, C_out, OH, OW) and w.
template <class T>
void backward_input(const T* gy, const T* wt, T* gx, const ConvShape& s) {
  const int64_t cig = s.c_in_group(), cog = s.c_out_group(), taps_per_channel = s.kh * s.kw;
  const int64_t k = cog * taps_per_channel, cip = padded<T>(cig);
  const Bordered out{cog, s.oh, s.ow, s.kh - 1 - s.p.padding.h, s.kw - 1 - s.p.padding.w};
  const std::vector<int64_t> taps = tap_offsets(out, s.kh, s.kw);
  // flipped[g][(m, a, b)][c] = w[g * cog + m][c][kh - 1 - a][kw - 1 - b], zero for c >= cig.
  T* flipped = scratch<T, 4>(s.groups * k * cip);
  for (int64_t g = 0; g < s.groups; ++g) {
    for (int64_t m = 0; m < cog; ++m) {
      for (int64_t t = 0; t < taps_per_channel; ++t) {
        T* dst = flipped + (g * k + m * taps_per_channel + t) * cip;
        const T* src = wt + (g * cog + m) * cig * taps_per_channel + (taps_per_channel - 1 - t);
        for (int64_t c = 0; c < cip; ++c) dst[c] = c < cig ? src[c * taps_per_channel] : T(0);
      }
    }
  }
  for_images(s.batch, [&](int64_t first, int64_t last) {
    T* bordered = scratch<T, 0>(out.size());
    T* gx_t = scratch<T, 1>(s.in_plane() * cip);  // (H * W, cip)
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        copy_bordered(gy + (n * s.c_out + g * cog) * s.out_plane(), cog, s.oh, s.ow, out.pad_h, out.pad_w,
                      bordered);
        for (int64_t iy = 0; iy < s.h; ++iy) {
          conv_gemm::gemm<T, 7, 2>(s.w, cip, k, OffsetA<T>{bordered + iy * out.width(), taps.data()},
                                   flipped + g * k * cip, cip, gx_t + iy * s.w * cip, cip);
        }
        transpose(gx_t, s.in_plane(), cig, cip, gx + (n * s.c_in + g * cig) * s.in_plane(), s.in_plane());
      }
    }
  });
}

// dW^T rows (c, ki, 0..kW) (+)= the taps of that kernel row over the chunk's positions * gy^T.
template <class T>
void weight_rows(int64_t kw, int64_t j, int64_t cop, const OffsetA<T>& a, const T* gy_t, T* dw_t, bool accumulate) {
  if (cop % (4 * conv_gemm::kLanes<T>) == 0) {
    conv_gemm::gemm<T, 6, 4>(kw, cop, j, a, gy_t, cop, dw_t, cop, {.accumulate = accumulate});
  } else {
    conv_gemm::gemm<T, 6, 2>(kw, cop, j, a, gy_t, cop, dw_t, cop, {.accumulate = accumulate});
  }
}

// gw (C_out, C_in_g, kH, kW) = the gradient of conv with respect to its weight, summed over the batch.
template <class T>
void backward_weight(const T* gy, const T* x, T* gw, const ConvShape& s) {
  const int64_t cig = s.c_in_group(), cog = s.c_out_group(), k = s.col_rows(), p = s.out_plane();
  const int64_t cop = padded<T>(cog);
  const Bordered in{cig, s.h, s.w, s.p.padding.h, s.p.padding.w};
  // Images per GEMM: as many as keep grad_out^T within ~256 KiB (at least one, at most 16).
  const int64_t chunk =
      std::clamp<int64_t>((int64_t{256} << 10) / static_cast<int64_t>(p * cop * sizeof(T)), 1, 16);
  // Position j = (image i, oy, ox) of a chunk -> its offset in the chunk's stack of bordered copies.
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(chunk * p));
  for (int64_t i = 0; i < chunk; ++i) {
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      for (int64_t ox = 0; ox < s.ow; ++ox) positions.push_back(i * in.size() + oy * in.width() + ox);
    }
  }
  std::fill(gw, gw + s.c_out * k, T(0));
  std::mutex merge;
  for_images(s.batch, [&](int64_t first, int64_t last) {
    if (first == last) return;
    T* bordered = scratch<T, 0>(chunk * in.size());
    T* gy_t = scratch<T, 1>(chunk * p * cop);     // (J, cop)
    T* dw_t = scratch<T, 2>(s.groups * k * cop);  // per group (K, cop)
    for (int64_t n0 = first; n0 < last; n0 += chunk) {
      const int64_t images = std::min(chunk, last - n0);
      for (int64_t g = 0; g < s.groups; ++g) {
        for (int64_t i = 0; i < images; ++i) {
          const int64_t n = n0 + i;
          copy_bordered(x + (n * s.c_in + g * cig) * s.in_plane(), cig, s.h, s.w, in.pad_h, in.pad_w,
                        bordered + i * in.size());
          transpose(gy + (n * s.c_out + g * cog) * p, cog, p, p, gy_t + i * p * cop, cop);
        }
        for (int64_t c = 0; c < cig; ++c) {
          for (int64_t ki = 0; ki < s.kh; ++ki) {
            const int64_t row = (c * s.kh + ki) * s.kw;
            weight_rows<T>(s.kw, images * p, cop,
                           OffsetA<T>{bordered + c * in.plane() + ki * in.width(), positions.data()}, gy_t,
                           dw_t + (g * k + row) * cop, n0 != first);
          }
        }
      }
    }
    std::lock_guard<std::mutex> lock(merge);
    for (int64_t g = 0; g < s.groups; ++g) {
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t c = 0; c < cog; ++c) gw[(g * cog + c) * k + r] += dw_t[(g * k + r) * cop + c];
      }
    }
  });
}

}  // namespace syncgrad::cpu::implicit_conv
