// Register-tiled GEMM for the CPU conv kernels (tensor/cpu/conv.cpp), float and double:
//   C (M, N) = A (M, K) * B (K, N)  [+ C when accumulating]  [+ bias[row]]
// B and C are row-major with leading dimensions ldb/ldc and N a multiple of the vector width (kLanes); A is read
// through (row_stride, k_stride), so a row-major weight W and its transpose W^T are both used in place. Each
// tile of MR rows x NV vectors of C stays in registers for the whole K loop: a row of B is loaded as NV
// vectors, each A entry is broadcast. Column groups are the outer loop, so one B panel (K x NV vectors) is
// reused by every row tile while it is in cache. GCC/Clang vector extensions: 64-byte vectors compile to AVX-512
// FMAs under -march=native and to narrower instructions elsewhere.
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

template <class T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store(T* p, const Vec<T>& v) {
  std::memcpy(p, &v, sizeof v);
}

// A (M, K) with element (i, k) at data[i * row_stride + k * k_stride].
template <class T>
struct MatrixA {
  const T* data;
  int64_t row_stride, k_stride;
};

// What a tile does with C: overwrite or add, and an optional per-row bias (M entries) added once.
template <class T>
struct Epilogue {
  bool accumulate = false;
  const T* bias = nullptr;
};

// One MR x (NV * kLanes) tile of C over the whole K range.
template <class T, int MR, int NV>
inline void tile(const T* a, int64_t rs, int64_t ks, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t k,
                 const Epilogue<T>& e) {
  constexpr int64_t L = kLanes<T>;
  Vec<T> acc[MR][NV];
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = e.accumulate ? load(c + i * ldc + v * L) : Vec<T>{};
      if (e.bias != nullptr) acc[i][v] += e.bias[i];
    }
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    Vec<T> row[NV];
    for (int v = 0; v < NV; ++v) row[v] = load(b + kk * ldb + v * L);
    for (int i = 0; i < MR; ++i) {
      const T s = a[i * rs + kk * ks];
      for (int v = 0; v < NV; ++v) acc[i][v] += s * row[v];
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int v = 0; v < NV; ++v) store(c + i * ldc + v * L, acc[i][v]);
  }
}

// The last m % MR rows: tile<R> for R = rows (compile-time row counts MR - 1 down to 1).
template <class T, int R, int NV>
inline void tail_rows(int64_t rows, const T* a, int64_t rs, int64_t ks, const T* b, int64_t ldb, T* c, int64_t ldc,
                      int64_t k, const Epilogue<T>& e) {
  if constexpr (R > 0) {
    if (rows == R) tile<T, R, NV>(a, rs, ks, b, ldb, c, ldc, k, e);
    else tail_rows<T, R - 1, NV>(rows, a, rs, ks, b, ldb, c, ldc, k, e);
  }
}

// All rows of one column group of NV vectors.
template <class T, int MR, int NV>
void column_group(int64_t m, int64_t k, const MatrixA<T>& a, const T* b, int64_t ldb, T* c, int64_t ldc,
                  const Epilogue<T>& e) {
  int64_t i = 0;
  for (; i + MR <= m; i += MR) {
    tile<T, MR, NV>(a.data + i * a.row_stride, a.row_stride, a.k_stride, b, ldb, c + i * ldc, ldc, k,
                    {e.accumulate, e.bias != nullptr ? e.bias + i : nullptr});
  }
  if (i < m) {
    tail_rows<T, MR - 1, NV>(m - i, a.data + i * a.row_stride, a.row_stride, a.k_stride, b, ldb, c + i * ldc, ldc,
                             k, {e.accumulate, e.bias != nullptr ? e.bias + i : nullptr});
  }
}

// C (m, n) = A (m, k) * B (k, n) with the epilogue e; n % kLanes<T> == 0. Tiles of MR rows x NV vectors; the
// columns left over are done with NV - 1, NV - 2, ... vectors.
template <class T, int MR, int NV>
void gemm(int64_t m, int64_t n, int64_t k, const MatrixA<T>& a, const T* b, int64_t ldb, T* c, int64_t ldc,
          const Epilogue<T>& e = {}) {
  constexpr int64_t width = NV * kLanes<T>;
  int64_t j = 0;
  for (; j + width <= n; j += width) column_group<T, MR, NV>(m, k, a, b + j, ldb, c + j, ldc, e);
  if constexpr (NV > 1) {
    if (j < n) gemm<T, MR, NV - 1>(m, n - j, k, a, b + j, ldb, c + j, ldc, e);
  }
}

}  // namespace syncgrad::cpu::conv_gemm
