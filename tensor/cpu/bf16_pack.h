// Operand packing for the bfloat16 dot-product GEMM (bf16_tile.h), on raw bfloat16 bits (uint16_t):
//   pack_pairs  B (K, N), any strides -> "VNNI" rows: packed row p = B(2p, n), B(2p + 1, n) for n in [0, N),
//               zeros up to n_pad columns and for the missing row 2p + 1 of an odd K;
//   pack_rows   A (M, K), any strides -> row-major (M, k_pad), zeros in columns [K, k_pad).
// Unit-stride sources take block transposes (conv_im2col.h's transpose) or row interleaving.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tensor/cpu/conv_im2col.h"
#include "tensor/cpu/transpose_tiles.h"

namespace syncgrad::cpu::bf16 {

// K rounded up to an even number: the packed width of a row of A, twice the number of pairs.
inline int64_t even(int64_t k) { return (k + 1) / 2 * 2; }

// dst (ceil(k / 2), n_pad, 2) <- src (k, n) with element (r, c) at src[r * row_stride + c * col_stride].
inline void pack_pairs(const uint16_t* src, int64_t row_stride, int64_t col_stride, int64_t k, int64_t n,
                       uint16_t* dst, int64_t n_pad) {
  const int64_t pairs = (k + 1) / 2;
  if (row_stride == 1 && k % 2 == 0 && col_stride % 2 == 0 && reinterpret_cast<uintptr_t>(src) % 4 == 0) {
    // Each column's pairs are 32-bit words: a word transpose (n, pairs) -> (pairs, n_pad).
    auto* words = reinterpret_cast<uint32_t*>(dst);
    transpose<uint32_t>(reinterpret_cast<const uint32_t*>(src), n, pairs, col_stride / 2, words, n_pad);
    return;
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const uint16_t* even_row = src + 2 * p * row_stride;
    const bool has_odd = 2 * p + 1 < k;
    uint16_t* out = dst + p * 2 * n_pad;
    if (col_stride == 1 && has_odd) {
      const uint16_t* odd_row = even_row + row_stride;
      for (int64_t c = 0; c < n; ++c) {
        out[2 * c] = even_row[c];
        out[2 * c + 1] = odd_row[c];
      }
    } else {
      for (int64_t c = 0; c < n; ++c) {
        out[2 * c] = even_row[c * col_stride];
        out[2 * c + 1] = has_odd ? even_row[row_stride + c * col_stride] : uint16_t{0};
      }
    }
    std::fill(out + 2 * n, out + 2 * n_pad, uint16_t{0});
  }
}

// dst (m, k_pad) row-major <- src (m, k) with element (r, c) at src[r * row_stride + c * col_stride].
inline void pack_rows(const uint16_t* src, int64_t row_stride, int64_t col_stride, int64_t m, int64_t k,
                      uint16_t* dst, int64_t k_pad) {
  if (row_stride == 1) {
    transpose<uint16_t>(src, k, m, col_stride, dst, k_pad);  // (k, m) -> (m, k_pad), padding zeroed
    return;
  }
  for (int64_t r = 0; r < m; ++r) {
    const uint16_t* in = src + r * row_stride;
    uint16_t* out = dst + r * k_pad;
    if (col_stride == 1) {
      std::memcpy(out, in, static_cast<size_t>(k) * sizeof(uint16_t));
    } else {
      for (int64_t c = 0; c < k; ++c) out[c] = in[c * col_stride];
    }
    std::fill(out + k, out + k_pad, uint16_t{0});
  }
}

}  // namespace syncgrad::cpu::bf16
