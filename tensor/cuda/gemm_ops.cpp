// The CUDA GEMM (kernels::gemm): floating types through cuBLAS's strided-batched GEMM (f16/bf16 on tensor
// cores with f32 accumulation, f32 optionally on TF32, f64 in f64), integer types through gemm_int.cu.
// Operands are read in place: a transposed view is a cuBLAS op flag, not a copy; only a matrix that is
// unit-strided in neither direction is copied. Batch dims are merged into one strided batch where the strides
// allow (a broadcast operand has batch stride 0); what cannot be merged is iterated here.
#include <algorithm>
#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/check.h"
#include "tensor/cuda/blas.h"
#include "tensor/cuda/gemm_kernels.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/matrix_layout.h"

namespace syncgrad::cuda {
namespace {

// The batch of out (..., M, N), a and b as element offsets of the first matrix of each piece plus one strided
// run per piece (the innermost mergeable batch dims).
struct BatchPlan {
  struct Start {
    int64_t a = 0, b = 0, out = 0;
  };
  std::vector<Start> starts;
  BatchStrides run;
};

BatchPlan plan_batches(const Tensor& out, const Tensor& a, const Tensor& b) {
  struct Dim {
    int64_t size, a, b, out;
  };
  std::vector<Dim> dims;
  for (int64_t d = 0; d + 2 < out.dim(); ++d) {
    if (out.sizes()[d] == 1) continue;
    const Dim dim{out.sizes()[d], a.strides()[d], b.strides()[d], out.strides()[d]};
    if (!dims.empty()) {
      Dim& outer = dims.back();
      if (outer.a == dim.a * dim.size && outer.b == dim.b * dim.size && outer.out == dim.out * dim.size) {
        outer = {outer.size * dim.size, dim.a, dim.b, dim.out};
        continue;
      }
    }
    dims.push_back(dim);
  }
  BatchPlan plan;
  if (!dims.empty()) {
    const Dim inner = dims.back();
    plan.run = {inner.size, inner.a, inner.b, inner.out};
    dims.pop_back();
  }
  // The remaining outer dims, odometer style.
  std::vector<int64_t> index(dims.size(), 0);
  BatchPlan::Start start;
  while (true) {
    plan.starts.push_back(start);
    size_t d = dims.size();
    while (true) {
      if (d == 0) return plan;
      --d;
      start = {start.a + dims[d].a, start.b + dims[d].b, start.out + dims[d].out};
      if (++index[d] < dims[d].size) break;
      start = {start.a - dims[d].a * dims[d].size, start.b - dims[d].b * dims[d].size,
               start.out - dims[d].out * dims[d].size};
      index[d] = 0;
    }
  }
}

int checked_int(int64_t v, const char* what) {
  SYNCGRAD_CHECK(v <= INT_MAX, ValueError, "matmul: ", what, " = ", v,
                 " exceeds cuBLAS's 32-bit limit; split the product");
  return static_cast<int>(v);
}

struct BlasTypes {
  cudaDataType data;
  cublasComputeType_t compute;
};

BlasTypes blas_types(DType dtype) {
  switch (dtype) {
    case DType::f64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case DType::f16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::bf16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default: return {CUDA_R_32F, tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
  }
}

// cuBLAS's largest batch per call (its grid's limit).
constexpr int64_t kMaxBatchPerCall = 65535;

void gemm_blas(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  const MatrixLayout la = layout_of(a), lb = layout_of(b);
  const int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  const BlasTypes types = blas_types(out.dtype());
  const double alpha_d = alpha.to_double(), beta_d = beta.to_double();
  const float alpha_f = static_cast<float>(alpha_d), beta_f = static_cast<float>(beta_d);
  const bool f64 = out.dtype() == DType::f64;
  const void* alpha_ptr = f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta_ptr = f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  // Row-major C (M, N) is column-major C^T (N, M) = B^T A^T: b is cuBLAS's first operand. A row-major matrix
  // read column-major is its transpose already (no op); a column-major one needs the op.
  const cublasOperation_t op_b = lb.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = la.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const int mi = checked_int(n, "N"), ni = checked_int(m, "M"), ki = checked_int(k, "K");
  const int ldb = checked_int(lb.ld, "the leading dimension of b"),
            lda = checked_int(la.ld, "the leading dimension of a");
  const BatchPlan plan = plan_batches(out, a, b);
  const int64_t esize = static_cast<int64_t>(out.element_size());
  on_device("matmul", out.device(), [&](cudaStream_t) {
    BlasHandle& blas = blas_handle(out.device().index);
    std::lock_guard<std::mutex> lock(blas.mutex);
    for (const BatchPlan::Start& start : plan.starts) {
      for (int64_t first = 0; first < plan.run.count; first += kMaxBatchPerCall) {
        const int64_t count = std::min(kMaxBatchPerCall, plan.run.count - first);
        const char* a_ptr = bytes(a) + (start.a + first * plan.run.a) * esize;
        const char* b_ptr = bytes(b) + (start.b + first * plan.run.b) * esize;
        char* c_ptr = bytes(out) + (start.out + first * plan.run.out) * esize;
        SG_CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas.handle, op_b, op_a, mi, ni, ki, alpha_ptr, b_ptr, types.data,
                                                   ldb, plan.run.b, a_ptr, types.data, lda, plan.run.a, beta_ptr, c_ptr,
                                                   types.data, mi, plan.run.out, static_cast<int>(count), types.compute,
                                                   CUBLAS_GEMM_DEFAULT));
      }
    }
  });
}

void gemm_integer(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  const int64_t m = out.size(-2), n = out.size(-1), k = a.size(-1);
  const BatchPlan plan = plan_batches(out, a, b);
  const int64_t esize = static_cast<int64_t>(out.element_size());
  on_device("matmul", out.device(), [&](cudaStream_t stream) {
    for (const BatchPlan::Start& start : plan.starts) {
      launch_gemm_integer(out.dtype(), bytes(out) + start.out * esize, bytes(a) + start.a * esize,
                          bytes(b) + start.b * esize, m, n, k, {a.stride(-2), a.stride(-1)},
                          {b.stride(-2), b.stride(-1)}, plan.run, alpha.to_int(), beta.to_int(), stream);
    }
  });
}

void gemm_kernel(const Tensor& out, const Tensor& a_in, const Tensor& b_in, const Scalar& alpha, const Scalar& beta) {
  const DType dtype = out.dtype();
  if (dtype == DType::u8 || dtype == DType::boolean) {
    unsupported_dtype("matmul", dtype, "float32, float64, float16, bfloat16, int64, int32");
  }
  if (dtype == DType::i64 || dtype == DType::i32) return gemm_integer(out, a_in, b_in, alpha, beta);
  const Tensor a = layout_of(a_in).valid ? a_in : raw::contiguous(a_in);
  const Tensor b = layout_of(b_in).valid ? b_in : raw::contiguous(b_in);
  gemm_blas(out, a, b, alpha, beta);
}

}  // namespace

void register_gemm_kernels() { kernels::gemm.set(DeviceType::kCUDA, &gemm_kernel); }

}  // namespace syncgrad::cuda
