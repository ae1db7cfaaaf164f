// Register-tiled GEMM for the CPU conv kernels (tensor/cpu/conv.cpp), float and double:
//   C (M, N) = A (M, K) * B (K, N)  [+ C when accumulating]  [+ bias by row or by column]
// B and C are row-major with leading dimensions ldb/ldc and N a multiple of the vector width (kLanes). A is
// read through an accessor: StridedA (row and k strides, so a row-major W and W^T are both used in place) or
// OffsetA (consecutive rows, k through a table of offsets: the receptive fields of a zero-bordered input read
// in place, an implicit im2col). Each tile of MR rows x NV vectors of C stays in registers for the whole K
// loop: a row of B is loaded as NV vectors, each A entry is broadcast. Column groups are the outer loop, so one
// B panel (K x NV vectors) is reused by every row tile while it is in cache. GCC/Clang vector extensions: the
// data is laid out in 64-byte vectors (kLanes) on every target; a tile's accumulators are the target's own
// registers (Reg: 64 bytes under AVX-512, 32 under AVX2, 16 on plain x86-64), because g++ lowers 64-byte vector
// arithmetic without AVX-512 through the stack (a 6 x 4 tile ran at 4 GFLOP/s on an AVX2 EPYC, 6 rows of two
// 32-byte registers at 75-90). The requested MR x NV shape is for AVX-512's 32 registers; narrower targets run
// the tile that fits their 16 (TileShape).
#pragma once

#include <cstdint>
#include <cstring>

namespace syncgrad::cpu::conv_gemm {

template <class T>
struct VecOf {
  typedef T type __attribute__((vector_size(64)));
};
template <class T> using Vec = typename VecOf<T>::type;
template <class T> constexpr int64_t kLanes = 64 / sizeof(T);

#if defined(__AVX512F__)
constexpr int64_t kRegisterBytes = 64;
#elif defined(__AVX__)
constexpr int64_t kRegisterBytes = 32;
#else
constexpr int64_t kRegisterBytes = 16;
#endif
template <class T>
struct RegOf {
  typedef T type __attribute__((vector_size(kRegisterBytes)));
};
template <class T> using Reg = typename RegOf<T>::type;
constexpr int kRegistersPerVec = 64 / kRegisterBytes;

// The tile a target runs for a requested MR x NV: as asked with 32 vector registers (AVX-512); elsewhere 12
// accumulator registers of one 64-byte column vector (6 rows under AVX2), which leaves room for B's row and the
// broadcast A entry among 16 registers.
template <int MR, int NV>
struct TileShape {
  static constexpr int rows = kRegistersPerVec == 1 ? MR : 12 / kRegistersPerVec;
  static constexpr int vectors = kRegistersPerVec == 1 ? NV : 1;
};

template <class T, class V = Vec<T>>
inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T, class V>
inline void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// A (M, K) with element (i, k) at data[i * row_stride + k * k_stride].
template <class T>
struct StridedA {
  const T* data;
  int64_t row_stride, k_stride;

  const T* k_column(int64_t k) const { return data + k * k_stride; }
  int64_t step() const { return row_stride; }
  StridedA from_row(int64_t i) const { return {data + i * row_stride, row_stride, k_stride}; }
};

// A (M, K) with element (i, k) at data[i + k_offset[k]].
template <class T>
struct OffsetA {
  const T* data;
  const int64_t* k_offset;

  const T* k_column(int64_t k) const { return data + k_offset[k]; }
  static constexpr int64_t step() { return 1; }
  OffsetA from_row(int64_t i) const { return {data + i, k_offset}; }
};

// What a tile does with C: overwrite or add, plus an optional bias per row (M entries) or per column (N).
template <class T>
struct Epilogue {
  bool accumulate = false;
  const T* row_bias = nullptr;
  const T* col_bias = nullptr;

  Epilogue shifted(int64_t row, int64_t col) const {
    return {accumulate, row_bias != nullptr ? row_bias + row : nullptr, col_bias != nullptr ? col_bias + col : nullptr};
  }
};

// One MR x (NV * kLanes) tile of C over the whole K range, accumulated in R = NV * kRegistersPerVec registers a row.
template <class T, int MR, int NV, class A>
inline void tile(const A& a, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t k, const Epilogue<T>& e) {
  constexpr int R = NV * kRegistersPerVec;
  constexpr int64_t L = kRegisterBytes / sizeof(T);
  Reg<T> acc[MR][R];
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < R; ++v) {
      acc[i][v] = e.accumulate ? load<T, Reg<T>>(c + i * ldc + v * L) : Reg<T>{};
      if (e.row_bias != nullptr) acc[i][v] += e.row_bias[i];
      if (e.col_bias != nullptr) acc[i][v] += load<T, Reg<T>>(e.col_bias + v * L);
    }
  }
  const int64_t step = a.step();
  for (int64_t kk = 0; kk < k; ++kk) {
    Reg<T> row[R];
    for (int v = 0; v < R; ++v) row[v] = load<T, Reg<T>>(b + kk * ldb + v * L);
    const T* column = a.k_column(kk);
    for (int i = 0; i < MR; ++i) {
      const T s = column[i * step];
      for (int v = 0; v < R; ++v) acc[i][v] += s * row[v];
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < R; ++v) store(c + i * ldc + v * L, acc[i][v]);
  }
}

// The last m % MR rows: tile<R> for R = rows (compile-time row counts MR - 1 down to 1).
template <class T, int R, int NV, class A>
inline void tail_rows(int64_t rows, const A& a, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t k,
                      const Epilogue<T>& e) {
  if constexpr (R > 0) {
    if (rows == R) tile<T, R, NV>(a, b, ldb, c, ldc, k, e);
    else tail_rows<T, R - 1, NV>(rows, a, b, ldb, c, ldc, k, e);
  }
}

// All rows of one column group of NV vectors.
template <class T, int MR, int NV, class A>
void column_group(int64_t m, int64_t k, const A& a, const T* b, int64_t ldb, T* c, int64_t ldc,
                  const Epilogue<T>& e) {
  int64_t i = 0;
  for (; i + MR <= m; i += MR) tile<T, MR, NV>(a.from_row(i), b, ldb, c + i * ldc, ldc, k, e.shifted(i, 0));
  if (i < m) tail_rows<T, MR - 1, NV>(m - i, a.from_row(i), b, ldb, c + i * ldc, ldc, k, e.shifted(i, 0));
}

// C (m, n) = A (m, k) * B (k, n) with the epilogue e; n % kLanes<T> == 0. Tiles of MR rows x NV vectors; the
// columns left over are done with NV - 1, NV - 2, ... vectors.
template <class T, int MR, int NV, class A>
void gemm(int64_t m, int64_t n, int64_t k, const A& a, const T* b, int64_t ldb, T* c, int64_t ldc,
          const Epilogue<T>& e = {}) {
  if constexpr (TileShape<MR, NV>::rows != MR || TileShape<MR, NV>::vectors != NV) {
    gemm<T, TileShape<MR, NV>::rows, TileShape<MR, NV>::vectors>(m, n, k, a, b, ldb, c, ldc, e);
    return;
  }
  constexpr int64_t width = NV * kLanes<T>;
  int64_t j = 0;
  for (; j + width <= n; j += width) column_group<T, MR, NV>(m, k, a, b + j, ldb, c + j, ldc, e.shifted(0, j));
  if constexpr (NV > 1) {
    if (j < n) gemm<T, MR, NV - 1>(m, n - j, k, a, b + j, ldb, c + j, ldc, e.shifted(0, j));
  }
}

}  // namespace syncgrad::cpu::conv_gemm
