// Blocked float32 GEMM: C is computed in blocks of kRowBlock rows; within a block the inner dimension goes in
// slices of kDepthBlock, so the slice of A (kRowBlock x kDepthBlock) and the matching rows of B stay in the
// L1/L2 caches while conv_gemm::gemm sweeps the column groups (6 x 4-vector register tiles). B must be
// row-major for the tiles: a B with unit row stride (a transposed weight) is first copied into a row-major
// buffer (K x N, small next to the product). Row blocks run in parallel over the intra-op threads.
#include "tensor/cpu/gemm_tiled.h"

#include <algorithm>
#include <vector>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

constexpr int64_t kRowBlock = 192;
constexpr int64_t kDepthBlock = 512;
constexpr int64_t kMinSize = 16;
constexpr int64_t kMaxColumns = 4096;
// A B that must be copied row-major first (a transposed weight) pays K x N copies per product: below this many
// rows of A that copy costs more than the tiles gain over Eigen (an MLP's batch of 64 rows: 61 vs 86 GFLOP/s).
constexpr int64_t kMinRowsToCopyB = 512;

using conv_gemm::StridedA;

bool is_row_major(const Tensor& b) { return b.stride(1) == 1 && (b.size(0) == 1 || b.stride(0) >= b.size(1)); }

// b (K, N) as a row-major matrix: its own memory when it is one, else a copy in `buffer`.
const float* row_major(const Tensor& b, std::vector<float>& buffer, int64_t& ldb) {
  const int64_t k = b.size(0), n = b.size(1);
  const float* data = b.data_ptr<float>();
  if (is_row_major(b)) {
    ldb = k == 1 ? n : b.stride(0);
    return data;
  }
  buffer.resize(static_cast<size_t>(k * n));
  const int64_t row_stride = b.stride(0), col_stride = b.stride(1);
  constexpr int64_t kTile = 64;  // transpose in tiles so both sides stay in cache
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j) {
        for (int64_t kk = k0; kk < std::min(k, k0 + kTile); ++kk) {
          buffer[kk * n + j] = data[kk * row_stride + j * col_stride];
        }
      }
    }
  }
  ldb = n;
  return buffer.data();
}

}  // namespace

bool gemm_tiled_f32(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  if (out.dtype() != DType::f32 || out.dim() != 2 || alpha.to_double() != 1.0) return false;
  const double beta_value = beta.to_double();
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if ((beta_value != 0.0 && beta_value != 1.0) || n % conv_gemm::kLanes<float> != 0 || n > kMaxColumns ||
      m < kMinSize || k < kMinSize || (!is_row_major(b) && m < kMinRowsToCopyB)) {
    return false;
  }
  thread_local std::vector<float> packed_b;
  int64_t ldb = 0;
  const float* bp = row_major(b, packed_b, ldb);
  const StridedA<float> ap{a.data_ptr<float>(), a.stride(0), a.stride(1)};
  float* c = out.data_ptr<float>();
  const bool accumulate = beta_value == 1.0;
  const int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
  parallel_for(blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t i0 = block * kRowBlock, rows = std::min(kRowBlock, m - i0);
      for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
        const StridedA<float> slice{ap.data + i0 * ap.row_stride + k0 * ap.k_stride, ap.row_stride, ap.k_stride};
        conv_gemm::gemm<float, 6, 4>(rows, n, std::min(kDepthBlock, k - k0), slice, bp + k0 * ldb, ldb, c + i0 * n, n,
                                     {.accumulate = accumulate || k0 > 0});
      }
    }
  });
  return true;
}

}  // namespace syncgrad::cpu
