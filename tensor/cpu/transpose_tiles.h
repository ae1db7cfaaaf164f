// A transposing copy for the CPU kernels (conv, bf16 GEMM/conv, the float32 linear-layer GEMM, attention): whole
// square blocks of one target register's width (16 floats under AVX-512, 8 under AVX2) are transposed in vector
// registers (one two-input shuffle per index bit and row pair), the edges element by element. The blocks follow
// the target's register, not conv_gemm's 64-byte Vec: without AVX-512, g++ lowers the 16-lane shuffles of a
// 16 x 16 block through the stack (7.7 GB/s on a 128 x 32 attention head on an AVX2 Zen 3 EPYC, 31.6 GB/s in
// 8 x 8 blocks).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "tensor/cpu/conv_gemm.h"

namespace syncgrad::cpu {

// The side of a block transposed in registers, and its rows.
template <class T> constexpr int64_t kTransposeBlock = conv_gemm::kRegisterBytes / sizeof(T);
template <class T> using TransposeRow = conv_gemm::Reg<T>;

// Swaps bit `Bit` of the row index with bit `Bit` of the lane index between rows a and c of a square block
// (rows of any vector type; its lane count is the index sequence's length).
template <int Bit, class V, size_t... Lanes>
inline void swap_index_bit(V& a, V& c, std::index_sequence<Lanes...>) {
  constexpr int64_t L = sizeof...(Lanes), m = int64_t{1} << Bit;
  const V low = __builtin_shufflevector(a, c, ((Lanes & m) ? L + (Lanes ^ m) : Lanes)...);
  const V high = __builtin_shufflevector(a, c, ((Lanes & m) ? L + Lanes : (Lanes ^ m))...);
  a = low;
  c = high;
}

// Transposes the L x L block held in rows[0, L) in registers (L = kTransposeBlock): one bit swap per index bit.
template <class T, int Bit = 0>
inline void transpose_block(TransposeRow<T>* rows) {
  constexpr int64_t L = kTransposeBlock<T>, m = int64_t{1} << Bit;
  if constexpr (m < L) {
    for (int64_t i = 0; i < L; ++i) {
      if ((i & m) == 0) swap_index_bit<Bit>(rows[i], rows[i | m], std::make_index_sequence<L>());
    }
    transpose_block<T, Bit + 1>(rows);
  }
}

// dst (cols, dst_ld) <- src (rows, cols; rows src_ld apart)^T; dst columns [rows, dst_ld) are zeroed. Whole
// L x L blocks are transposed in registers, the edges element by element.
template <class T>
void transpose(const T* src, int64_t rows, int64_t cols, int64_t src_ld, T* dst, int64_t dst_ld) {
  constexpr int64_t L = kTransposeBlock<T>;
  const int64_t full_rows = rows / L * L, full_cols = cols / L * L;
  TransposeRow<T> block[L];
  for (int64_t r0 = 0; r0 < full_rows; r0 += L) {
    for (int64_t c0 = 0; c0 < full_cols; c0 += L) {
      for (int64_t i = 0; i < L; ++i) block[i] = conv_gemm::load<T, TransposeRow<T>>(src + (r0 + i) * src_ld + c0);
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
