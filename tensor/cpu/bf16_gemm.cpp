// bfloat16 batched GEMM on AVX512_BF16 dot products (bf16_tile.h), float32 accumulation, and the run-time
// check that the CPU has them. Per matrix, C = A @ B runs in one of two orientations:
//   direct      C (M, N)   = A rows (broadcast) x B packed in pairs (vectors)
//   transposed  C^T (N, M) = B^T rows (broadcast) x A^T packed in pairs, stored back transposed
// The broadcast operand is read in place when its K dimension is unit-stride and even, the vector operand is
// always packed; the orientation that packs fewer elements wins (e.g. linear's weight (out, in) is read in
// place as the rows of B^T, and only the activations are packed). The float32 result is scaled by alpha,
// beta * out added, and rounded to bfloat16 once.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/bf16_pack.h"
#include "tensor/cpu/cpu_features.h"
#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/transpose_tiles.h"
#include "tensor/threads.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "tensor/cpu/bf16_tile.h"

namespace syncgrad::cpu::bf16 {
namespace {

// A strided (rows, cols) bfloat16 matrix.
struct Matrix {
  const uint16_t* data;
  int64_t rows, cols, row_stride, col_stride;

  Matrix transposed() const { return {data, cols, rows, col_stride, row_stride}; }
};

// Elements packed when `rows` (M x K) is the broadcast operand and `vectors` (K x N) the packed one.
int64_t packing_cost(const Matrix& rows, const Matrix& vectors) {
  const bool in_place = rows.col_stride == 1 && rows.cols % 2 == 0;
  return (in_place ? 0 : rows.rows * rows.cols) + vectors.rows * vectors.cols;
}

// c (m, n_pad) = x (m, K) @ y (K, n) in float32; n_pad = n rounded up to whole vectors.
void product(const Matrix& x, const Matrix& y, float* c, int64_t n_pad) {
  const int64_t m = x.rows, k = x.cols, kp = (k + 1) / 2;
  uint16_t* packed_y = scratch<uint16_t, 10>(kp * 2 * n_pad);
  pack_pairs(y.data, y.row_stride, y.col_stride, k, y.cols, packed_y, n_pad);
  PairRows a{x.data, x.row_stride};
  if (!(x.col_stride == 1 && k % 2 == 0)) {
    uint16_t* packed_x = scratch<uint16_t, 11>(m * 2 * kp);
    pack_rows(x.data, x.row_stride, x.col_stride, m, k, packed_x, 2 * kp);
    a = {packed_x, 2 * kp};
  }
  const int64_t vectors = n_pad / kLanes;
  auto rows = [&](int64_t first, int64_t last) {
    const PairRows a_rows = a.from_row(first);
    float* c_rows = c + first * n_pad;
    if (vectors >= 4) gemm<6, 4>(last - first, n_pad, kp, a_rows, packed_y, 2 * n_pad, c_rows, n_pad);
    else if (vectors == 3) gemm<8, 3>(last - first, n_pad, kp, a_rows, packed_y, 2 * n_pad, c_rows, n_pad);
    else gemm<14, 2>(last - first, n_pad, kp, a_rows, packed_y, 2 * n_pad, c_rows, n_pad);
  };
  // Several threads split the rows into blocks of 24 (whole tiles of 6 or 8 rows).
  constexpr int64_t kRowBlock = 24;
  if (get_num_threads() > 1 && m * n_pad * kp > (int64_t{1} << 20) && m > kRowBlock) {
    parallel_for((m + kRowBlock - 1) / kRowBlock, 1, [&](int64_t begin, int64_t end) {
      rows(begin * kRowBlock, std::min(m, end * kRowBlock));
    });
  } else {
    rows(0, m);
  }
}

// out (m, n) bfloat16 = alpha * a @ b + beta * out for one matrix of the batch.
void gemm_matrix(uint16_t* out, const Matrix& a, const Matrix& b, float alpha, float beta) {
  const int64_t m = a.rows, n = b.cols;
  const bool transposed = packing_cost(b.transposed(), a.transposed()) < packing_cost(a, b);
  const int64_t c_rows = transposed ? n : m, c_cols = transposed ? m : n;
  const int64_t c_pad = (c_cols + kLanes - 1) / kLanes * kLanes;
  float* c = scratch<float, 12>(c_rows * c_pad);
  if (transposed) product(b.transposed(), a.transposed(), c, c_pad);
  else product(a, b, c, c_pad);
  if (transposed) {
    // C^T (n, c_pad) -> C (m, n): the float result transposed into a second buffer.
    float* direct = scratch<float, 13>(m * n);
    transpose<float>(c, n, m, c_pad, direct, n);
    c = direct;
  }
  const int64_t ldc = transposed ? n : c_pad;
  for (int64_t i = 0; i < m; ++i) {
    const float* ci = c + i * ldc;
    auto* oi = reinterpret_cast<Eigen::bfloat16*>(out + i * n);
    if (beta == 0.0f) {
      for (int64_t j = 0; j < n; ++j) oi[j] = to_bf16(alpha * ci[j]);
    } else {
      for (int64_t j = 0; j < n; ++j) oi[j] = to_bf16(alpha * ci[j] + beta * to_float(oi[j]));
    }
  }
}

// Element offsets of every matrix of a (..., rows, cols) tensor, batch index in row-major order.
std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t batch_dims = t.dim() - 2;
  std::vector<int64_t> offsets{0};
  for (int64_t d = 0; d < batch_dims; ++d) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(t.sizes()[d]));
    for (int64_t base : offsets) {
      for (int64_t i = 0; i < t.sizes()[d]; ++i) next.push_back(base + i * t.strides()[d]);
    }
    offsets = std::move(next);
  }
  return offsets;
}

// The dot-product kernels run where the CPU has AVX512_BF16 and executes vdpbf16ps at least as fast as its
// float32 FMAs: AMD Zen 5 (twice the FMA's flops: DESIGN.md, "bfloat16 kernels"), not Intel's cores (Sapphire
// Rapids without AMX: one vdpbf16ps per two cycles against two FMAs per cycle, half the FMA's flops, and
// oneDNN's bf16 matmul at 0.46-0.67x its float32), where bfloat16 runs on the float32 kernels. The
// environment overrides: SYNCGRAD_CPU_BF16_DOT=1 wherever the CPU has the instructions, =0 nowhere.
bool cpu_has_bf16_dot() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

bool choose_bf16_dot() {
  const std::optional<bool> forced = kernel_override(
      "SYNCGRAD_CPU_BF16_DOT", "1: bfloat16 products on the AVX512_BF16 dot-product kernels, 0: on the float32 kernels");
  if (forced) return *forced && cpu_has_bf16_dot();
  return cpu_has_bf16_dot() && !__builtin_cpu_is("intel");
}

}  // namespace

bool dot_available() {
  static const bool available = choose_bf16_dot();
  return available;
}

void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  const int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  const std::vector<int64_t> a_off = batch_offsets(a), b_off = batch_offsets(b);
  auto* c = static_cast<uint16_t*>(out.data_ptr());
  const auto* ap = static_cast<const uint16_t*>(a.data_ptr());
  const auto* bp = static_cast<const uint16_t*>(b.data_ptr());
  const int64_t count = static_cast<int64_t>(a_off.size());
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      gemm_matrix(c + i * m * n, {ap + a_off[i], m, k, a.stride(-2), a.stride(-1)},
                  {bp + b_off[i], k, n, b.stride(-2), b.stride(-1)}, static_cast<float>(alpha),
                  static_cast<float>(beta));
    }
  };
  // Batches that can occupy the threads run in parallel (each GEMM on one thread).
  if (count > 1 && count >= get_num_threads()) parallel_for(count, 1, run);
  else run(0, count);
}

}  // namespace syncgrad::cpu::bf16

#pragma GCC pop_options
