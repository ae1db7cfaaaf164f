// Register-tiled GEMM on AVX512_BF16 dot products for the bfloat16 CPU kernels (bf16_gemm.cpp, bf16_conv.cpp),
// accumulating in float32:
//   C (M, N) float  [+]=  A (M, K) * B (K, N)  [+ bias per column]
// K is consumed in pairs: one vdpbf16ps takes a pair of A entries (k, k+1) of one row, broadcast to all lanes,
// and 16 columns of B laid out in pairs ("VNNI": row p of the packed B holds B(2p, n), B(2p+1, n) side by side
// for every n, n padded to whole vectors), and adds both products to 16 float accumulators. A is read in
// place through an accessor that gives the address of pair p of row 0 (`column(p)`) and the distance between
// rows (`step()`): PairRows (a matrix with unit-stride K) or PairTable (pairs through a table of offsets: the
// receptive fields of a zero-bordered input, an implicit im2col). A tile of MR rows x NV vectors stays in
// registers for the whole K loop; column groups are the outer loop so one B panel serves every row tile.
// Include only from translation units compiled for AVX512_BF16 (after #pragma GCC target).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace syncgrad::cpu::bf16 {

inline constexpr int64_t kLanes = 16;  // floats per vector; one vector of packed B = 16 columns x 2 rows of K

// A (M, K) with pair p of row i at data + i * row_step + 2 * p (bfloat16 elements).
struct PairRows {
  const uint16_t* data;
  int64_t row_step;

  const uint16_t* column(int64_t p) const { return data + 2 * p; }
  int64_t step() const { return row_step; }
  PairRows from_row(int64_t i) const { return {data + i * row_step, row_step}; }
  PairRows from_pair(int64_t p) const { return {data + 2 * p, row_step}; }
};

// A (M, K) with pair p of row i at data + i * RowStep + offset[p] (bfloat16 elements).
template <int64_t RowStep>
struct PairTable {
  const uint16_t* data;
  const int64_t* offset;

  const uint16_t* column(int64_t p) const { return data + offset[p]; }
  static constexpr int64_t step() { return RowStep; }
  PairTable from_row(int64_t i) const { return {data + i * RowStep, offset}; }
  PairTable from_pair(int64_t p) const { return {data, offset + p}; }
};

// What a tile does with C: overwrite or add, plus an optional bias per column (N entries).
struct Epilogue {
  bool accumulate = false;
  const float* col_bias = nullptr;

  Epilogue shifted(int64_t col) const { return {accumulate, col_bias != nullptr ? col_bias + col : nullptr}; }
};

inline __m512bh broadcast_pair(const uint16_t* pair) {
  int32_t bits;
  std::memcpy(&bits, pair, sizeof bits);
  return reinterpret_cast<__m512bh>(_mm512_set1_epi32(bits));
}

// One MR x (NV * 16) tile of C over kp pairs of K; b points at the tile's first column in packed row 0.
template <int MR, int NV, class A>
inline void tile(const A& a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc, int64_t kp, const Epilogue& e) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = e.accumulate ? _mm512_loadu_ps(c + i * ldc + v * kLanes) : _mm512_setzero_ps();
      if (e.col_bias != nullptr) acc[i][v] = _mm512_add_ps(acc[i][v], _mm512_loadu_ps(e.col_bias + v * kLanes));
    }
  }
  const int64_t step = a.step();
  for (int64_t p = 0; p < kp; ++p) {
    __m512bh row[NV];
    for (int v = 0; v < NV; ++v) row[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + p * ldb + v * 2 * kLanes));
    const uint16_t* column = a.column(p);
    for (int i = 0; i < MR; ++i) {
      const __m512bh pair = broadcast_pair(column + i * step);
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], pair, row[v]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + i * ldc + v * kLanes, acc[i][v]);
  }
}

// The last m % MR rows: tile<R> for R = rows (compile-time row counts MR - 1 down to 1).
template <int R, int NV, class A>
inline void tail_rows(int64_t rows, const A& a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc, int64_t kp,
                      const Epilogue& e) {
  if constexpr (R > 0) {
    if (rows == R) tile<R, NV>(a, b, ldb, c, ldc, kp, e);
    else tail_rows<R - 1, NV>(rows, a, b, ldb, c, ldc, kp, e);
  }
}

// C (m, n) [+]= A (m, 2 kp) * B (2 kp, n) with the epilogue e; n % 16 == 0; ldb counts bfloat16 elements
// (2 per packed column). Tiles of MR rows x NV vectors; leftover columns take NV - 1, NV - 2, ... vectors.
template <int MR, int NV, class A>
void gemm(int64_t m, int64_t n, int64_t kp, const A& a, const uint16_t* b, int64_t ldb, float* c, int64_t ldc,
          const Epilogue& e = {}) {
  constexpr int64_t width = NV * kLanes;
  int64_t j = 0;
  for (; j + width <= n; j += width) {
    const Epilogue ej = e.shifted(j);
    int64_t i = 0;
    for (; i + MR <= m; i += MR) tile<MR, NV>(a.from_row(i), b + 2 * j, ldb, c + i * ldc + j, ldc, kp, ej);
    if (i < m) tail_rows<MR - 1, NV>(m - i, a.from_row(i), b + 2 * j, ldb, c + i * ldc + j, ldc, kp, ej);
  }
  if constexpr (NV > 1) {
    if (j < n) gemm<MR, NV - 1>(m, n - j, kp, a, b + 2 * j, ldb, c + j, ldc, e.shifted(j));
  }
}

}  // namespace syncgrad::cpu::bf16
