// CUDA integer GEMM (int64, int32), which cuBLAS does not offer: one thread per output element summing its
// row-column product in the element type, over strided and batched operands. Correctness, not speed: the
// models only multiply floating matrices.
#include <cstdint>

#include "tensor/cuda/gemm_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

template <class T>
void gemm_integer_typed(T* out, const T* a, const T* b, int64_t m, int64_t n, int64_t k, MatrixStrides sa,
                        MatrixStrides sb, BatchStrides batch, T alpha, T beta, cudaStream_t stream) {
  for_each_index(batch.count * m * n, stream, [=] SG_LAMBDA(int64_t e) {
    const int64_t entry = e / (m * n), i = (e / n) % m, j = e % n;
    const T* row = a + entry * batch.a + i * sa.row;
    const T* column = b + entry * batch.b + j * sb.col;
    T total = 0;
    for (int64_t p = 0; p < k; ++p) total = static_cast<T>(total + row[p * sa.col] * column[p * sb.row]);
    T* c = out + entry * batch.out + i * n + j;
    *c = beta == 0 ? static_cast<T>(alpha * total) : static_cast<T>(beta * *c + alpha * total);
  });
}

}  // namespace

void launch_gemm_integer(DType dtype, void* out, const void* a, const void* b, int64_t m, int64_t n, int64_t k,
                         MatrixStrides a_strides, MatrixStrides b_strides, BatchStrides batch, int64_t alpha,
                         int64_t beta, cudaStream_t stream) {
  if (dtype == DType::i32) {
    gemm_integer_typed<int32_t>(static_cast<int32_t*>(out), static_cast<const int32_t*>(a),
                                static_cast<const int32_t*>(b), m, n, k, a_strides, b_strides, batch,
                                static_cast<int32_t>(alpha), static_cast<int32_t>(beta), stream);
  } else {
    gemm_integer_typed<int64_t>(static_cast<int64_t*>(out), static_cast<const int64_t*>(a),
                                static_cast<const int64_t*>(b), m, n, k, a_strides, b_strides, batch, alpha, beta,
                                stream);
  }
}

}  // namespace syncgrad::cuda
