// Shared pieces of the CPU conv kernels (tensor/cpu/conv.cpp, conv_implicit.h): the convolution's sizes
// (ConvShape), per-thread scratch, the batch loop, im2col (receptive fields -> rows of a column matrix) and
// col2im (the reverse, adding up overlaps) for the general path, and a zero-bordered plane copy for the implicit
// path (the transposing copy the conv kernels also use is in transpose_tiles.h).
// A column matrix has one row per (input channel, kernel row, kernel column) and one column per output
// position; its rows are `ld` elements apart.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/stride2_rows.h"
#include "tensor/cpu/window.h"
#include "tensor/ops/conv.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {

// Sizes of one convolution, per group where it matters.
struct ConvShape {
  int64_t batch, c_in, h, w;  // input (N, C_in, H, W)
  int64_t c_out, kh, kw;      // weight (C_out, C_in / groups, kH, kW)
  int64_t oh, ow;             // output (N, C_out, OH, OW)
  int64_t groups;
  Conv2dParams p;

  int64_t c_in_group() const { return c_in / groups; }
  int64_t c_out_group() const { return c_out / groups; }
  int64_t col_rows() const { return c_in_group() * kh * kw; }  // K of the GEMMs
  int64_t out_plane() const { return oh * ow; }
  int64_t in_plane() const { return h * w; }
};

// A per-thread buffer of at least n elements, reused across calls (slot tells the buffers of one call apart), so
// a training step touches no fresh pages.
template <class T, int Slot>
T* scratch(int64_t n) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
  return buffer.data();
}

// Runs body(first_image, last_image) over the batch: split across the intra-op threads when there are several.
inline void for_images(int64_t batch, const std::function<void(int64_t, int64_t)>& body) {
  if (get_num_threads() > 1) {
    parallel_for(batch, 1, body);
  } else {
    body(0, batch);
  }
}

// n rounded up to a whole number of vectors of T.
template <class T>
int64_t padded(int64_t n) {
  return (n + conv_gemm::kLanes<T> - 1) / conv_gemm::kLanes<T> * conv_gemm::kLanes<T>;
}

// dst (channels, h + 2 * pad_h, w + 2 * pad_w) <- src (channels, h, w) inside a zero border.
template <class T>
void copy_bordered(const T* src, int64_t channels, int64_t h, int64_t w, int64_t pad_h, int64_t pad_w, T* dst) {
  const int64_t bw = w + 2 * pad_w, plane = (h + 2 * pad_h) * bw;
  std::fill(dst, dst + channels * plane, T(0));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < h; ++y) {
      const T* in = src + (c * h + y) * w;
      std::copy(in, in + w, dst + c * plane + (y + pad_h) * bw + pad_w);
    }
  }
}

// col (C_in_g * kH * kW, ld), columns [0, OH * OW) <- the receptive fields of one image's group planes
// src (C_in_g, H, W); positions in the padding give zeros.
template <class T>
void im2col(const T* src, T* col, int64_t ld, const ConvShape& s) {
  const int64_t sh = s.p.stride.h, sw = s.p.stride.w;
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    const T* plane = src + c * s.in_plane();
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        T* row = col + ((c * s.kh + ki) * s.kw + kj) * ld;
        const int64_t x0 = kj * s.p.dilation.w - s.p.padding.w;
        const auto [lo, hi] = valid_range(x0, sw, s.w, s.ow);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          T* out = row + oy * s.ow;
          const int64_t iy = oy * sh - s.p.padding.h + ki * s.p.dilation.h;
          if (iy < 0 || iy >= s.h) {
            std::fill(out, out + s.ow, T(0));
            continue;
          }
          const T* in = plane + iy * s.w;
          if constexpr (std::is_same_v<T, float> && stride2::kAvailable) {
            if (sw == 2) {
              stride2::gather(in, x0, s.w, s.ow, out);
              continue;
            }
          }
          std::fill(out, out + lo, T(0));
          if (sw == 1) {
            std::copy(in + lo + x0, in + hi + x0, out + lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) out[ox] = in[ox * sw + x0];
          }
          std::fill(out + hi, out + s.ow, T(0));
        }
      }
    }
  }
}

// dst (C_in_g, H, W) = the column matrix col (C_in_g * kH * kW, ld), columns [0, OH * OW), folded back onto
// the input planes (overlapping windows add up).
template <class T>
void col2im(const T* col, int64_t ld, T* dst, const ConvShape& s) {
  std::fill(dst, dst + s.c_in_group() * s.in_plane(), T(0));
  const int64_t sh = s.p.stride.h, sw = s.p.stride.w;
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    T* plane = dst + c * s.in_plane();
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        const T* row = col + ((c * s.kh + ki) * s.kw + kj) * ld;
        const int64_t x0 = kj * s.p.dilation.w - s.p.padding.w;
        const auto [lo, hi] = valid_range(x0, sw, s.w, s.ow);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          const int64_t iy = oy * sh - s.p.padding.h + ki * s.p.dilation.h;
          if (iy < 0 || iy >= s.h) continue;
          const T* in = row + oy * s.ow;
          T* out = plane + iy * s.w;
          if constexpr (std::is_same_v<T, float> && stride2::kAvailable) {
            if (sw == 2) {
              stride2::scatter_add(in, x0, s.w, s.ow, out);
              continue;
            }
          }
          for (int64_t ox = lo; ox < hi; ++ox) out[ox * sw + x0] += in[ox];
        }
      }
    }
  }
}

}  // namespace syncgrad::cpu
