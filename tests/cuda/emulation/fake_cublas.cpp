// A host-memory stand-in for the cuBLAS calls the CUDA module makes (tensor/cuda/blas.cpp, gemm_ops.cpp), so
// the emulated module (test fixture only, never installed) runs the GEMM glue, its op flags, leading
// dimensions and batch strides included, without a GPU: a plain column-major triple loop with cuBLAS's
// argument conventions, accumulating in float (double for CUBLAS_COMPUTE_64F) as the GPU does.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

struct FakeHandle {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

// The value of element i of a matrix of `type`, as Acc.
template <class Acc>
Acc load(const void* p, cudaDataType type, long long i) {
  switch (type) {
    case CUDA_R_64F: return static_cast<Acc>(static_cast<const double*>(p)[i]);
    case CUDA_R_16F: return static_cast<Acc>(__half2float(static_cast<const __half*>(p)[i]));
    case CUDA_R_16BF: return static_cast<Acc>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    default: return static_cast<Acc>(static_cast<const float*>(p)[i]);
  }
}

template <class Acc>
void store(void* p, cudaDataType type, long long i, Acc v) {
  switch (type) {
    case CUDA_R_64F: static_cast<double*>(p)[i] = static_cast<double>(v); break;
    case CUDA_R_16F: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case CUDA_R_16BF: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v)); break;
    default: static_cast<float*>(p)[i] = static_cast<float>(v); break;
  }
}

size_t type_size(cudaDataType type) {
  switch (type) {
    case CUDA_R_64F: return 8;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    default: return 4;
  }
}

template <class Acc>
void gemm(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, Acc alpha, const void* a,
          cudaDataType type, int lda, long long stride_a, const void* b, int ldb, long long stride_b, Acc beta, void* c,
          int ldc, long long stride_c, int batch) {
  const size_t esize = type_size(type);
  for (int e = 0; e < batch; ++e) {
    const void* ae = static_cast<const char*>(a) + e * stride_a * static_cast<long long>(esize);
    const void* be = static_cast<const char*>(b) + e * stride_b * static_cast<long long>(esize);
    void* ce = static_cast<char*>(c) + e * stride_c * static_cast<long long>(esize);
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        Acc total = 0;
        for (int p = 0; p < k; ++p) {
          const long long ai =
              transa == CUBLAS_OP_N ? i + static_cast<long long>(p) * lda : p + static_cast<long long>(i) * lda;
          const long long bi =
              transb == CUBLAS_OP_N ? p + static_cast<long long>(j) * ldb : j + static_cast<long long>(p) * ldb;
          total += load<Acc>(ae, type, ai) * load<Acc>(be, type, bi);
        }
        const long long ci = i + static_cast<long long>(j) * ldc;
        const Acc value = beta == Acc(0) ? alpha * total : alpha * total + beta * load<Acc>(ce, type, ci);
        store<Acc>(ce, type, ci, value);
      }
    }
  }
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(new FakeHandle());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  reinterpret_cast<FakeHandle*>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  reinterpret_cast<FakeHandle*>(handle)->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb, int m,
                                          int n, int k, const void* alpha, const void* a, cudaDataType a_type, int lda,
                                          long long stride_a, const void* b, cudaDataType b_type, int ldb,
                                          long long stride_b, const void* beta, void* c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t) {
  if (a_type != b_type || a_type != c_type || m < 0 || n < 0 || k < 0 || batch < 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // cuBLAS's leading-dimension rules: what the checks of a real call would reject fails here too.
  const int a_rows = transa == CUBLAS_OP_N ? m : k, b_rows = transb == CUBLAS_OP_N ? k : n;
  if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (compute == CUBLAS_COMPUTE_64F) {
    gemm<double>(transa, transb, m, n, k, *static_cast<const double*>(alpha), a, a_type, lda, stride_a, b, ldb,
                 stride_b, *static_cast<const double*>(beta), c, ldc, stride_c, batch);
  } else {
    gemm<float>(transa, transb, m, n, k, *static_cast<const float*>(alpha), a, a_type, lda, stride_a, b, ldb, stride_b,
                *static_cast<const float*>(beta), c, ldc, stride_c, batch);
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
