// CUDA kernels with a bool side: comparisons and logical connectives (bool results, tensor/cpu/compare.cpp's
// rules) and where (a bool condition choosing between two operands, moved as raw bits).
#include <cstdint>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/elementwise_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

template <class M>
__host__ __device__ __forceinline__ bool apply_compare(CompareKind op, M x, M y) {
  switch (op) {
    case CompareKind::eq: return x == y;
    case CompareKind::ne: return x != y;
    case CompareKind::lt: return x < y;
    case CompareKind::le: return x <= y;
    case CompareKind::gt: return x > y;
    case CompareKind::ge: return x >= y;
    case CompareKind::logical_and: return x != M(0) && y != M(0);
    case CompareKind::logical_or: return x != M(0) || y != M(0);
    case CompareKind::logical_xor: return (x != M(0)) != (y != M(0));
  }
  return false;
}

template <class T>
void compare_typed(CompareKind op, bool* out, const T* a, const T* b, const Geometry<3>& g, cudaStream_t stream) {
  using M = opmath_t<T>;
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    out[o.at[0]] = apply_compare<M>(op, static_cast<M>(op_value(a[o.at[1]])), static_cast<M>(op_value(b[o.at[2]])));
  });
}

template <class U>
void where_typed(U* out, const bool* cond, const U* a, const U* b, const Geometry<4>& g, cudaStream_t stream) {
  for_each_offset<4>(g, stream,
                     [=] SG_LAMBDA(const Offsets<4>& o) { out[o.at[0]] = cond[o.at[1]] ? a[o.at[2]] : b[o.at[3]]; });
}

}  // namespace

void launch_compare(CompareKind op, DType dtype, void* out, const void* a, const void* b, const Geometry<3>& g,
                    cudaStream_t stream) {
  visit_dtype(dtype, [&]<class T>() {
    compare_typed<T>(op, static_cast<bool*>(out), static_cast<const T*>(a), static_cast<const T*>(b), g, stream);
  });
}

void launch_where(DType dtype, void* out, const void* cond, const void* a, const void* b, const Geometry<4>& g,
                  cudaStream_t stream) {
  visit_bits(dtype, [&]<class U>() {
    where_typed<U>(static_cast<U*>(out), static_cast<const bool*>(cond), static_cast<const U*>(a),
                   static_cast<const U*>(b), g, stream);
  });
}

}  // namespace syncgrad::cuda
