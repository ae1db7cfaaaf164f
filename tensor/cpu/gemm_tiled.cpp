// Blocked float32 GEMM: C is computed in blocks of kRowBlock rows; within a block the inner dimension goes in
// slices of kDepthBlock, so the slice of A (kRowBlock x kDepthBlock) and the matching rows of B stay in the
// L1/L2 caches while conv_gemm::gemm sweeps the column groups (6 x 4-vector register tiles). The tiles need a
// row-major B. A linear layer's forward has B = W^T (unit row stride); there are two ways round that:
//   - many rows of A (M >= kMinRowsToCopyB): copy B row-major (K x N) once and run the tiles on it;
//   - few rows (a training batch): compute C^T (N x M) = W (N x K) @ A^T instead, where W is read in place as
//     the tiles' A and only A^T (K x M, padded to whole vectors) is copied; C^T is transposed back into C.
//     For a batch of 64 through a 784 -> 256 layer that copies 66k floats instead of W's 200k.
// Row blocks (and, for few rows, column parts) run in parallel over the intra-op threads.
#include "tensor/cpu/gemm_tiled.h"

#include <algorithm>
#include <vector>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/transpose_tiles.h"
#include "tensor/ops/matrix_layout.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

constexpr int64_t kRowBlock = 192;
constexpr int64_t kDepthBlock = 512;
constexpr int64_t kMinSize = 16;
constexpr int64_t kMaxColumns = 4096;
// A row-major B read in place with rows this long or longer maps a panel's rows onto few cache sets: a 12 x 768
// GPT's 3072 -> 768 layer's gradients ran at 53-65 GFLOP/s here against Eigen's 86-101 (it packs B).
constexpr int64_t kMaxRowMajorColumns = 2048;
// From this many rows of A, copying a transposed B (K x N) costs less than transposing A and C (a batch of 64
// through 784 -> 256: 61 GFLOP/s copying B, 101 transposing A and C; a batch of 1000: 95 against 73).
constexpr int64_t kMinRowsToCopyB = 512;
constexpr int64_t kLanes = conv_gemm::kLanes<float>;
// Below these a thread's share of C is too small to pay for the split (the tiles are 6 rows x 64 columns).
constexpr int64_t kMinRowsPerThread = 48;
constexpr int64_t kMinColsPerPart = 128;

using conv_gemm::StridedA;


// dst (rows, cols), row-major with leading dimension ld, from src where element (r, c) is src[r * rs + c * cs].
// In 16 x 16 tiles, so both sides stay in cache: for operands whose rows are not contiguous.
void copy_strided(const float* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, float* dst, int64_t ld) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) dst[r * ld + c] = src[r * rs + c * cs];
      }
    }
  }
}

// How blocked_gemm splits C between the intra-op threads: row blocks of at most kRowBlock rows and, when the
// rows alone cannot give every thread its share (a batch of 64 rows), column parts too.
struct GemmSplit {
  int64_t rows_per_block, row_blocks, cols_per_part, col_parts;
};

GemmSplit split_for_threads(int64_t m, int64_t n) {
  const int64_t threads = get_num_threads();
  int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  if (threads == 1) return {kRowBlock, row_blocks, n, 1};
  if (row_blocks >= threads) {
    row_blocks = (row_blocks + threads - 1) / threads * threads;  // the same number of blocks for every thread
  } else {
    row_blocks = std::max(row_blocks, std::min(threads, m / kMinRowsPerThread));
  }
  const int64_t rows_per_block = ((m + row_blocks - 1) / row_blocks + 5) / 6 * 6;  // whole 6-row tiles
  row_blocks = (m + rows_per_block - 1) / rows_per_block;
  const int64_t col_parts = std::max<int64_t>(1, std::min(threads / row_blocks, n / kMinColsPerPart));
  const int64_t cols_per_part = ((n + col_parts - 1) / col_parts + kLanes - 1) / kLanes * kLanes;
  return {rows_per_block, row_blocks, cols_per_part, (n + cols_per_part - 1) / cols_per_part};
}

// c (m, n) [+]= a (m, k) @ b (k, n): b and c row-major (ldb, ldc), n a multiple of kLanes; the blocks of
// split_for_threads in parallel.
void blocked_gemm(int64_t m, int64_t n, int64_t k, const StridedA<float>& a, const float* b, int64_t ldb, float* c,
                  int64_t ldc, bool accumulate) {
  const GemmSplit split = split_for_threads(m, n);
  parallel_for(split.row_blocks * split.col_parts, 1, [&](int64_t first, int64_t last) {
    for (int64_t item = first; item < last; ++item) {
      const int64_t block = item / split.col_parts, part = item % split.col_parts;
      const int64_t i0 = block * split.rows_per_block, rows = std::min(split.rows_per_block, m - i0);
      const int64_t j0 = part * split.cols_per_part, cols = std::min(split.cols_per_part, n - j0);
      for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        const StridedA<float> slice = a.from_row(i0);
        const StridedA<float> depth{slice.data + k0 * a.k_stride, a.row_stride, a.k_stride};
        conv_gemm::gemm<float, 6, 4>(rows, cols, std::min(kDepthBlock, k - k0), depth, b + k0 * ldb + j0, ldb,
                                     c + i0 * ldc + j0, ldc, {.accumulate = accumulate || k0 > 0});
      }
    }
  });
}

// out (M, N) [+]= a (M, K) @ b (K, N) with b row-major or, from kMinRowsToCopyB rows, copied row-major.
void gemm_b_row_major(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  thread_local std::vector<float> packed_b;
  const float* bp = b.data_ptr<float>();
  const MatrixLayout layout = layout_of(b);
  int64_t ldb = layout.ld;
  if (!layout.valid || !layout.row_major) {
    packed_b.resize(static_cast<size_t>(k * n));
    copy_strided(bp, k, n, b.stride(0), b.stride(1), packed_b.data(), n);
    bp = packed_b.data();
    ldb = n;
  }
  blocked_gemm(m, n, k, {a.data_ptr<float>(), a.stride(0), a.stride(1)}, bp, ldb, out.data_ptr<float>(), n,
               accumulate);
}

// out (M, N) [+]= a (M, K) @ b (K, N) for a column-major b (W^T of a row-major W (N, K)), as the transpose of
// W @ a^T. The transpositions run in vector registers when rows are contiguous (a's always are in a layer).
void gemm_through_transpose(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  const int64_t padded_m = (m + kLanes - 1) / kLanes * kLanes;
  thread_local std::vector<float> a_transposed, out_transposed;
  a_transposed.resize(static_cast<size_t>(k * padded_m));    // (K, M) row-major, ld padded_m
  out_transposed.resize(static_cast<size_t>(n * padded_m));  // (N, M) row-major, ld padded_m
  const float* ap = a.data_ptr<float>();
  if (a.stride(1) == 1) transpose<float>(ap, m, k, a.stride(0), a_transposed.data(), padded_m);
  else copy_strided(ap, k, m, a.stride(1), a.stride(0), a_transposed.data(), padded_m);
  float* c = out.data_ptr<float>();
  if (accumulate) transpose<float>(c, m, n, n, out_transposed.data(), padded_m);
  const StridedA<float> w{b.data_ptr<float>(), layout_of(b).ld, 1};
  blocked_gemm(n, padded_m, k, w, a_transposed.data(), padded_m, out_transposed.data(), padded_m, accumulate);
  transpose<float>(out_transposed.data(), n, m, padded_m, c, n);
}

}  // namespace

bool gemm_tiled_f32(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  if (out.dtype() != DType::f32 || out.dim() != 2 || alpha.to_double() != 1.0) return false;
  const double beta_value = beta.to_double();
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if ((beta_value != 0.0 && beta_value != 1.0) || m < kMinSize || k < kMinSize) return false;
  const bool accumulate = beta_value == 1.0;
  const MatrixLayout layout = layout_of(b);
  const bool row_major = layout.valid && layout.row_major;
  if (!row_major && m < kMinRowsToCopyB) {
    if (!layout.valid || n < kMinSize || m > kMaxColumns) return false;
    gemm_through_transpose(out, a, b, accumulate);
    return true;
  }
  if (n % kLanes != 0 || (row_major ? n >= kMaxRowMajorColumns : n > kMaxColumns)) return false;
  gemm_b_row_major(out, a, b, accumulate);
  return true;
}

}  // namespace syncgrad::cpu
