// A transposing copy for the CPU kernels (conv, bf16 GEMM/conv, the float32 linear-layer GEMM): whole
// kLanes x kLanes blocks are transposed in vector registers (one two-input shuffle per index bit and row pair),
// the edges element by element.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "tensor/cpu/conv_gemm.h"

namespace syncgrad::cpu {

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

// dst (cols, dst_ld) <- src (rows, cols; rows src_ld apart)^T; dst columns [rows, dst_ld) are zeroed. Whole
// kLanes x kLanes blocks are transposed in registers, the edges element by element.
template <class T>
void transpose(const T* src, int64_t rows, int64_t cols, int64_t src_ld, T* dst, int64_t dst_ld) {
  constexpr int64_t L = conv_gemm::kLanes<T>;
  const int64_t full_rows = rows / L * L, full_cols = cols / L * L;
  conv_gemm::Vec<T> block[L];
  for (int64_t r0 = 0; r0 < full_rows; r0 += L) {
    for (int64_t c0 = 0; c0 < full_cols; c0 += L) {
      for (int64_t i = 0; i < L; ++i) block[i] = conv_gemm::load(src + (r0 + i) * src_ld + c0);
      transpose_block<T>(block);
      for (int64_t i = 0; i < L; ++i) conv_gemm::store(dst + (c0 + i) * dst_ld + r0, block[i]);
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    const int64_t first_row = c < full_cols ? full_rows : 0;
    for (int64_t r = first_row; r < rows; ++r) dst[c * dst_ld + r] = src[r * src_ld + c];
    std::fill(dst + c * dst_ld + rows, dst + (c + 1) * dst_ld, T(0));
  }
}

}  // namespace syncgrad::cpu
