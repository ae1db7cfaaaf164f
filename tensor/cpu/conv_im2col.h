// Column-matrix helpers of the CPU conv kernels (tensor/cpu/conv.cpp): the convolution's sizes (ConvShape),
// im2col (receptive fields -> rows of a column matrix), col2im (the reverse, accumulating) and a transposing
// copy. A column matrix has one row per (input channel, kernel row, kernel column) and one column per output
// position; its rows are `ld` elements apart. Stride 1 without dilation (the common case) goes through a
// zero-bordered copy of the input planes, so every output row is one unclipped run of whole vectors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/window.h"
#include "tensor/ops/conv.h"

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
  // Stride 1 and no dilation: the fast im2col/col2im through a zero-bordered plane copy.
  bool unit_stride() const { return p.stride == Size2(1) && p.dilation == Size2(1); }
  // The zero-bordered planes (C_in_g, H + 2 * pad_h, W + 2 * pad_w), with room for a vector read past the end.
  int64_t bordered_h() const { return h + 2 * p.padding.h; }
  int64_t bordered_w() const { return w + 2 * p.padding.w; }
  template <class T>
  int64_t bordered_size() const {
    return c_in_group() * bordered_h() * bordered_w() + 2 * conv_gemm::kLanes<T>;
  }
};

// bordered (C_in_g, H + 2 * pad_h, W + 2 * pad_w) <- src (C_in_g, H, W) inside a zero border.
template <class T>
void copy_bordered(const T* src, T* bordered, const ConvShape& s) {
  const int64_t bw = s.bordered_w(), plane = s.bordered_h() * bw;
  std::fill(bordered, bordered + s.bordered_size<T>(), T(0));
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    for (int64_t y = 0; y < s.h; ++y) {
      const T* in = src + (c * s.h + y) * s.w;
      std::copy(in, in + s.w, bordered + c * plane + (y + s.p.padding.h) * bw + s.p.padding.w);
    }
  }
}

// The unit-stride im2col from the bordered planes: row (c, ki, kj), output row oy is the run
// bordered[c][oy + ki][kj, kj + OW). Runs are copied as whole vectors in increasing order, each spilling over
// the start of the next; a vector that would end past the row is copied exactly, so nothing outside the row's
// OH * OW columns is written.
template <class T>
void im2col_unit_stride(const T* bordered, T* col, int64_t ld, const ConvShape& s) {
  constexpr int64_t L = conv_gemm::kLanes<T>;
  const int64_t bw = s.bordered_w(), plane = s.bordered_h() * bw, ow = s.ow, end = s.out_plane();
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        T* row = col + ((c * s.kh + ki) * s.kw + kj) * ld;
        const T* in = bordered + c * plane + ki * bw + kj;
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          for (int64_t x = 0; x < ow; x += L) {
            const int64_t at = oy * ow + x;
            if (at + L <= end) conv_gemm::store(row + at, conv_gemm::load(in + oy * bw + x));
            else std::copy(in + oy * bw + x, in + oy * bw + std::min(ow, x + L), row + at);
          }
        }
      }
    }
  }
}

// col (C_in_g * kH * kW, ld), columns [0, OH * OW) <- the receptive fields of one image's group planes
// src (C_in_g, H, W); positions in the padding give zeros. `bordered` is scratch of s.bordered_size<T>().
template <class T>
void im2col(const T* src, T* col, int64_t ld, const ConvShape& s, T* bordered) {
  if (s.unit_stride()) {
    copy_bordered(src, bordered, s);
    im2col_unit_stride(bordered, col, ld, s);
    return;
  }
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

// The unit-stride col2im: bordered (zero-bordered planes, zeroed here) accumulates each run of col in whole
// vectors, lanes past the run's end masked to zero, and its interior is copied to dst (C_in_g, H, W).
template <class T>
void col2im_unit_stride(const T* col, int64_t ld, T* dst, const ConvShape& s, T* bordered) {
  using V = conv_gemm::Vec<T>;
  constexpr int64_t L = conv_gemm::kLanes<T>;
  const int64_t bw = s.bordered_w(), plane = s.bordered_h() * bw, ow = s.ow;
  V lane;
  for (int64_t i = 0; i < L; ++i) lane[i] = static_cast<T>(i);
  std::fill(bordered, bordered + s.bordered_size<T>(), T(0));
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        const T* row = col + ((c * s.kh + ki) * s.kw + kj) * ld;
        T* out = bordered + c * plane + ki * bw + kj;
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          for (int64_t x = 0; x < ow; x += L) {
            const V v = conv_gemm::load(row + oy * ow + x);
            const V kept = lane < static_cast<T>(ow - x) ? v : V{};
            conv_gemm::store(out + oy * bw + x, conv_gemm::load(out + oy * bw + x) + kept);
          }
        }
      }
    }
  }
  for (int64_t c = 0; c < s.c_in_group(); ++c) {
    for (int64_t y = 0; y < s.h; ++y) {
      const T* in = bordered + c * plane + (y + s.p.padding.h) * bw + s.p.padding.w;
      std::copy(in, in + s.w, dst + (c * s.h + y) * s.w);
    }
  }
}

// dst (C_in_g, H, W) = the column matrix col (C_in_g * kH * kW, ld), columns [0, OH * OW), folded back onto
// the input planes (overlapping windows add up). `bordered` is scratch of s.bordered_size<T>().
template <class T>
void col2im(const T* col, int64_t ld, T* dst, const ConvShape& s, T* bordered) {
  if (s.unit_stride()) {
    col2im_unit_stride(col, ld, dst, s, bordered);
    return;
  }
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
          for (int64_t ox = lo; ox < hi; ++ox) out[ox * sw + x0] += in[ox];
        }
      }
    }
  }
}

// Swaps bit `Bit` of the row index with bit `Bit` of the lane index between rows a and c of a square block.
template <class T, int Bit, size_t... Lanes>
inline void swap_index_bit(conv_gemm::Vec<T>& a, conv_gemm::Vec<T>& c, std::index_sequence<Lanes...>) {
  constexpr int64_t L = conv_gemm::kLanes<T>, m = int64_t{1} << Bit;
  const conv_gemm::Vec<T> low = __builtin_shufflevector(a, c, ((Lanes & m) ? L + (Lanes ^ m) : Lanes)...);
  const conv_gemm::Vec<T> high = __builtin_shufflevector(a, c, ((Lanes & m) ? L + Lanes : (Lanes ^ m))...);
  a = low;
  c = high;
}

// Transposes the kLanes x kLanes block held in rows[0, kLanes) in registers: one bit swap per index bit.
template <class T, int Bit = 0>
inline void transpose_block(conv_gemm::Vec<T>* rows) {
  constexpr int64_t L = conv_gemm::kLanes<T>, m = int64_t{1} << Bit;
  if constexpr (m < L) {
    for (int64_t i = 0; i < L; ++i) {
      if ((i & m) == 0) swap_index_bit<T, Bit>(rows[i], rows[i | m], std::make_index_sequence<L>());
    }
    transpose_block<T, Bit + 1>(rows);
  }
}

// dst (cols, ld) <- src (rows, cols)^T; dst columns [rows, ld) are zeroed. Whole kLanes x kLanes blocks are
// transposed in registers, the edges element by element.
template <class T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  constexpr int64_t L = conv_gemm::kLanes<T>;
  const int64_t full_rows = rows / L * L, full_cols = cols / L * L;
  conv_gemm::Vec<T> block[L];
  for (int64_t r0 = 0; r0 < full_rows; r0 += L) {
    for (int64_t c0 = 0; c0 < full_cols; c0 += L) {
      for (int64_t i = 0; i < L; ++i) block[i] = conv_gemm::load(src + (r0 + i) * cols + c0);
      transpose_block<T>(block);
      for (int64_t i = 0; i < L; ++i) conv_gemm::store(dst + (c0 + i) * ld + r0, block[i]);
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    const int64_t first_row = c < full_cols ? full_rows : 0;
    for (int64_t r = first_row; r < rows; ++r) dst[c * ld + r] = src[r * cols + c];
    std::fill(dst + c * ld + rows, dst + (c + 1) * ld, T(0));
  }
}

}  // namespace syncgrad::cpu
