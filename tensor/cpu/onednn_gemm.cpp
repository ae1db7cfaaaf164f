// oneDNN's GEMMs: dnnl_sgemm for float32 products, matmul primitives (cached by data type, shape, strides,
// accumulation and bias) for bfloat16 ones and for float32 ones with a bias; and the choice of oneDNN for
// bfloat16 products.
#include "tensor/cpu/onednn_gemm.h"

#include <dnnl.h>
#include <dnnl.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <unordered_map>

#include "tensor/cpu/cpu_features.h"
#include "tensor/cpu/onednn_context.h"

namespace syncgrad::cpu {
namespace {

// From this many multiply-adds (a batch of 64 through a 256 -> 256 layer) oneDNN was as fast as the
// register-tiled kernels on one thread and 1.1-1.4x faster on two (syncgrad-bench gemm); below it a primitive's
// fixed cost (~2 us per call) weighs more.
constexpr int64_t kMinMultiplyAdds = int64_t{1} << 22;
// A row-major B with rows this long is read in place by oneDNN 2.6's matmul primitive, which ran a 12 x 768 GPT's
// 3072 -> 768 layer (input and weight gradients) at 55-60 GFLOP/s, where its BLAS-style dnnl_sgemm, which packs
// B, ran them at 127-135 (docs/BENCHMARKS.md, "float32 GEMM"). float32 products without a bias therefore run on
// dnnl_sgemm (on the other shapes of the bundled models it was as fast as the primitive or faster: 12 x 768 GPT
// products 121-143 against 94-131); a bias needs the primitive, which such a B leaves to the caller's kernels.
constexpr int64_t kMaxRowMajorB = 2048;
constexpr size_t kMaxCachedPrimitives = 512;

using DataType = dnnl::memory::data_type;
// Operand and result data types, M, N, K, A's and B's row and column strides, C's row stride, accumulate, bias.
using Key = std::tuple<DataType, DataType, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       bool, bool>;

// A matmul primitive and the scratchpad it needs (the caller's: onednn_context.h).
struct Matmul {
  dnnl::matmul primitive;
  dnnl::memory::desc scratchpad;
};

// The primitive for `key`, created on first use; nullptr when oneDNN cannot run that layout.
std::shared_ptr<const Matmul> primitive_for(const Key& key) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Matmul>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedPrimitives) cache.clear();
  const auto [type, c_type, m, n, k, a_rows, a_cols, b_rows, b_cols, ldc, accumulate, bias] = key;
  using desc = dnnl::memory::desc;
  std::shared_ptr<const Matmul> matmul;
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      attr.set_post_ops(sum);
    }
    const desc a({m, k}, type, {a_rows, a_cols}), b({k, n}, type, {b_rows, b_cols}), c({m, n}, c_type, {ldc, 1});
    const dnnl::matmul::primitive_desc pd(bias ? dnnl::matmul::desc(a, b, desc({1, n}, c_type, {n, 1}), c)
                                               : dnnl::matmul::desc(a, b, c),
                                          attr, onednn::engine());
    matmul = std::make_shared<const Matmul>(Matmul{dnnl::matmul(pd), pd.scratchpad_desc()});
  } catch (const dnnl::error&) {
    matmul = nullptr;  // a layout or type oneDNN does not take here: the caller's own kernels run it
  }
  cache.emplace(key, matmul);
  return matmul;
}

// An operand of any type: element (i, j) at byte data + (i * rows + j * cols) * element size.
struct Operand {
  const void* data;
  int64_t rows, cols;
};

bool long_row_major(const Operand& b) { return b.cols == 1 && b.rows >= kMaxRowMajorB; }

// c (m, n), rows ldc apart, (+)= a @ b in float32 through dnnl_sgemm (row-major, each operand with a unit stride
// along one dim); false for other layouts.
bool run_sgemm(int64_t m, int64_t n, int64_t k, Operand a, Operand b, float* c, int64_t ldc, bool accumulate) {
  // 'N' with the row stride as leading dimension, or 'T' (the transpose of a row-major matrix) with the column's.
  auto layout = [](const Operand& x) -> std::optional<std::pair<char, int64_t>> {
    if (x.cols == 1) return std::pair{'N', x.rows};
    if (x.rows == 1) return std::pair{'T', x.cols};
    return std::nullopt;
  };
  const auto la = layout(a), lb = layout(b);
  if (!la || !lb) return false;
  return dnnl_sgemm(la->first, lb->first, m, n, k, 1.0f, static_cast<const float*>(a.data), la->second,
                    static_cast<const float*>(b.data), lb->second, accumulate ? 1.0f : 0.0f, static_cast<float*>(c),
                    ldc) == dnnl_success;
}

// c (m, n) of c_type, rows ldc apart, (+)= a @ b of `type` (+ bias (n) of c_type on every row, when given):
// float32 without a bias on dnnl_sgemm, the rest on the cached primitive; false when oneDNN refuses the layout.
bool run_matmul(DataType type, DataType c_type, int64_t m, int64_t n, int64_t k, Operand a, Operand b, void* c,
                int64_t ldc, bool accumulate, const void* bias = nullptr) {
  if (type == DataType::f32 && bias == nullptr && run_sgemm(m, n, k, a, b, static_cast<float*>(c), ldc, accumulate)) {
    return true;
  }
  if (long_row_major(b)) return false;
  const auto matmul =
      primitive_for({type, c_type, m, n, k, a.rows, a.cols, b.rows, b.cols, ldc, accumulate, bias != nullptr});
  if (!matmul) return false;
  const auto& engine = onednn::engine();
  using desc = dnnl::memory::desc;
  dnnl::memory a_mem(desc({m, k}, type, {a.rows, a.cols}), engine, const_cast<void*>(a.data));
  dnnl::memory b_mem(desc({k, n}, type, {b.rows, b.cols}), engine, const_cast<void*>(b.data));
  dnnl::memory c_mem(desc({m, n}, c_type, {ldc, 1}), engine, c);
  const dnnl::memory scratchpad_mem = onednn::thread_memory(matmul->scratchpad, 0);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem},
                                             {DNNL_ARG_WEIGHTS, b_mem},
                                             {DNNL_ARG_DST, c_mem},
                                             {DNNL_ARG_SCRATCHPAD, scratchpad_mem}};
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(desc({1, n}, c_type, {n, 1}), engine, const_cast<void*>(bias)));
  }
  dnnl::stream& stream = onednn::stream();
  try {
    matmul->primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    onednn::throw_run_failure(e, "matmul", type == DataType::bf16);
  }
  return true;
}

// On CPUs with usable AMX-BF16 (cpu_features.h) oneDNN runs bfloat16 matmuls on the tiles. Elsewhere the float32
// path is faster (docs/BENCHMARKS.md: oneDNN's avx512_core_bf16 matmul at 0.46-0.67x its float32 on the Intel
// Xeon without AMX). SYNCGRAD_CPU_BF16_ONEDNN=1 chooses oneDNN wherever it has bfloat16 kernels, =0 never.
bool choose_onednn_bf16() {
  return kernel_override("SYNCGRAD_CPU_BF16_ONEDNN",
                         "1: bfloat16 matmuls and convolutions on oneDNN, 0: on syncgrad's own kernels")
      .value_or(amx_bf16_usable());
}

}  // namespace

bool onednn_bf16_chosen() {
  static const bool chosen = choose_onednn_bf16();
  return chosen;
}

// The conditions both Tensor entry points share; the product's type, or nullopt when oneDNN is not for it.
std::optional<DataType> tensor_product_type(const Tensor& out, const Tensor& a, const Tensor& b) {
  const DType dtype = out.dtype();
  if ((dtype != DType::f32 && dtype != DType::bf16) || a.dtype() != dtype || b.dtype() != dtype) return std::nullopt;
  if (out.dim() != 2 || !out.is_contiguous()) return std::nullopt;
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if (m * n * k < kMinMultiplyAdds) return std::nullopt;
  return dtype == DType::f32 ? DataType::f32 : DataType::bf16;
}

bool onednn_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  const double beta_value = beta.to_double();
  if (alpha.to_double() != 1.0 || (beta_value != 0.0 && beta_value != 1.0)) return false;
  const std::optional<DataType> type = tensor_product_type(out, a, b);
  if (!type) return false;
  return run_matmul(*type, *type, out.size(0), out.size(1), a.size(1), {a.data_ptr(), a.stride(0), a.stride(1)},
                    {b.data_ptr(), b.stride(0), b.stride(1)}, out.data_ptr(), out.size(1), beta_value == 1.0);
}

bool onednn_gemm_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const std::optional<DataType> type = tensor_product_type(out, a, b);
  if (!type || bias.dtype() != out.dtype() || !bias.is_contiguous() || bias.numel() != out.size(1)) return false;
  return run_matmul(*type, *type, out.size(0), out.size(1), a.size(1), {a.data_ptr(), a.stride(0), a.stride(1)},
                    {b.data_ptr(), b.stride(0), b.stride(1)}, out.data_ptr(), out.size(1), false, bias.data_ptr());
}

bool onednn_sgemm(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c, int64_t ldc,
                  bool accumulate) {
  return run_matmul(DataType::f32, DataType::f32, m, n, k, {a.data, a.row_stride, a.col_stride},
                    {b.data, b.row_stride, b.col_stride}, c, ldc, accumulate);
}

bool onednn_gemm_bf16_f32(int64_t m, int64_t n, int64_t k, StridedBF16Matrix a, StridedBF16Matrix b, float* c,
                          int64_t ldc, bool accumulate) {
  return run_matmul(DataType::bf16, DataType::f32, m, n, k, {a.data, a.row_stride, a.col_stride},
                    {b.data, b.row_stride, b.col_stride}, c, ldc, accumulate);
}

}  // namespace syncgrad::cpu
