// CPU batched GEMM kernel: float32 on oneDNN, the register tiles or Eigen (gemm_f32), other types on Eigen. Each
// (rows, cols) operand matrix is mapped in place: row-major when its columns are unit-stride, column-major (the
// transpose of a row-major matrix) when its rows are; only a matrix unit-strided in neither direction is copied.
// bfloat16 runs on oneDNN where it is chosen (onednn_bf16_chosen: CPUs with AMX), else on the AVX512_BF16 kernels
// of bf16_gemm.cpp where they are (bf16::dot_available); float16 (and bfloat16 elsewhere) operands are widened to
// float32, multiplied on the float32 GEMM and rounded back once. Also the fused linear-layer kernel (gemm_bias). Batches run in parallel over the intra-op threads.
// GCC 12 reports a false -Wmaybe-uninitialized inside its own AVX-512 intrinsics (the `__Y = __Y` idiom) when
// Eigen's GEMM is inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/Core>
#include <vector>

#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/gemm_tiled.h"
#include "tensor/cpu/onednn_gemm.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/matrix_layout.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

template <class T, int Order>
using ConstMatrixMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;
template <class T>
using OutMatrixMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;

// Element offsets of every matrix of a (..., rows, cols) tensor, batch index in row-major order.
std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t batch_dims = t.dim() - 2;
  int64_t count = 1;
  for (int64_t d = 0; d < batch_dims; ++d) count *= t.sizes()[d];
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  std::vector<int64_t> index(static_cast<size_t>(batch_dims), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    offsets[i] = offset;
    for (int64_t d = batch_dims - 1; d >= 0; --d) {
      offset += t.strides()[d];
      if (++index[d] < t.sizes()[d]) break;
      offset -= t.strides()[d] * t.sizes()[d];
      index[d] = 0;
    }
  }
  return offsets;
}

// c (M, N) = beta * c + alpha * a @ b, with Eigen's GEMM (GEMV when M or N is 1).
template <class T, class A, class B>
void gemm_mapped(OutMatrixMap<T> c, const A& a, const B& b, T alpha, T beta) {
  if (beta == T(0)) {
    if (alpha == T(1)) c.noalias() = a * b;
    else c.noalias() = alpha * a * b;
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * a * b;
  }
}

template <class T>
void gemm_matrix(T* c, const T* a, MatrixLayout la, const T* b, MatrixLayout lb, int64_t m, int64_t n, int64_t k,
                 T alpha, T beta) {
  OutMatrixMap<T> cm(c, m, n, Eigen::OuterStride<>(n));
  auto with_a = [&](const auto& am) {
    if (lb.row_major) {
      gemm_mapped<T>(cm, am, ConstMatrixMap<T, Eigen::RowMajor>(b, k, n, Eigen::OuterStride<>(lb.ld)), alpha, beta);
    } else {
      gemm_mapped<T>(cm, am, ConstMatrixMap<T, Eigen::ColMajor>(b, k, n, Eigen::OuterStride<>(lb.ld)), alpha, beta);
    }
  };
  if (la.row_major) with_a(ConstMatrixMap<T, Eigen::RowMajor>(a, m, k, Eigen::OuterStride<>(la.ld)));
  else with_a(ConstMatrixMap<T, Eigen::ColMajor>(a, m, k, Eigen::OuterStride<>(la.ld)));
}

// Runs body(i) for every batch entry: in parallel over the batch when it can occupy the threads (each GEMM
// then runs on one thread), otherwise in order with Eigen threading each GEMM.
template <class Body>
void for_each_batch(int64_t count, Body&& body) {
  if (count > 1 && count >= get_num_threads()) {
    parallel_for(count, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) body(i);
    });
  } else {
    for (int64_t i = 0; i < count; ++i) body(i);
  }
}

template <class T>
T scale_as(const Scalar& s) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(s.to_int());
  else return static_cast<T>(s.to_double());
}

// float32, float64 and the integer types: Eigen's GEMM straight on the operands' memory.
template <class T>
void gemm_native(const Tensor& out, const Tensor& a_in, const Tensor& b_in, const Scalar& alpha, const Scalar& beta) {
  Tensor a = layout_of(a_in).valid ? a_in : raw::contiguous(a_in);
  Tensor b = layout_of(b_in).valid ? b_in : raw::contiguous(b_in);
  const MatrixLayout la = layout_of(a), lb = layout_of(b);
  const int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  const std::vector<int64_t> a_off = batch_offsets(a), b_off = batch_offsets(b);
  T* c = out.data_ptr<T>();
  const T* ap = a.data_ptr<T>();
  const T* bp = b.data_ptr<T>();
  const T alpha_t = scale_as<T>(alpha), beta_t = scale_as<T>(beta);
  for_each_batch(static_cast<int64_t>(a_off.size()), [&](int64_t i) {
    gemm_matrix<T>(c + i * m * n, ap + a_off[i], la, bp + b_off[i], lb, m, n, k, alpha_t, beta_t);
  });
}

// A float16/bfloat16 GEMM operand as float32 (exact): a column-major matrix stays column-major, so a
// transposed weight is still read in place by gemm_tiled_f32's transposing path.
Tensor widened(const Tensor& t) {
  const MatrixLayout layout = layout_of(t);
  if (layout.valid && !layout.row_major) return raw::to(t.transpose(-2, -1), DType::f32).transpose(-2, -1);
  return raw::to(t, DType::f32);
}

// float32: oneDNN for large 2-D products (onednn_gemm.h), the register tiles for the other linear-layer shapes
// (gemm_tiled.h), Eigen for the rest.
void gemm_f32(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  if (onednn_gemm(out, a, b, alpha, beta) || gemm_tiled_f32(out, a, b, alpha, beta)) return;
  gemm_native<float>(out, a, b, alpha, beta);
}

// float16/bfloat16 on the float32 kernels: the operands widened, the float32 GEMM, the result rounded once. On
// CPUs without fast bfloat16 dot products this is as fast as float32 but for the conversions, O(MK + KN + MN)
// against the product's O(MNK).
void gemm_widened(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  const Tensor out_f32 = beta.to_double() == 0.0 ? empty(out.sizes(), {.dtype = DType::f32}) : raw::to(out, DType::f32);
  gemm_f32(out_f32, widened(a), widened(b), alpha, beta);
  kernels::copy(out.device(), out, out_f32);
}

void gemm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  visit_numeric(out.dtype(), "matmul", [&]<class T>() {
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (onednn_bf16_chosen() && onednn_gemm(out, a, b, alpha, beta)) return;
      if (bf16::dot_available()) bf16::gemm(out, a, b, alpha.to_double(), beta.to_double());
      else gemm_widened(out, a, b, alpha, beta);
    } else if constexpr (std::is_same_v<T, half>) {
      gemm_widened(out, a, b, alpha, beta);
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      unsupported_dtype("matmul", out.dtype(), "float32, float64, float16, bfloat16, int64, int32");
    } else {
      if constexpr (std::is_same_v<T, float>) gemm_f32(out, a, b, alpha, beta);
      else gemm_native<T>(out, a, b, alpha, beta);
    }
  });
}

// A linear layer's product with its bias: oneDNN adds the bias as it writes the result (one pass over out);
// where oneDNN does not take the product (or bfloat16 products are not chosen for it), the bias is copied into
// out and the GEMM accumulates onto it.
void gemm_bias_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const bool onednn_type = out.dtype() == DType::f32 || (out.dtype() == DType::bf16 && onednn_bf16_chosen());
  if (onednn_type && onednn_gemm_bias(out, a, b, bias)) return;
  raw::copy_(out, bias);  // broadcast over the rows
  gemm_kernel(out, a, b, 1, 1);
}

const KernelRegistrar reg_gemm(kernels::gemm, DeviceType::kCPU, &gemm_kernel);
const KernelRegistrar reg_gemm_bias(kernels::gemm_bias, DeviceType::kCPU, &gemm_bias_kernel);

}  // namespace
}  // namespace syncgrad::cpu
