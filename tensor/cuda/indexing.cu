// CUDA indexing kernels: index range checks, embedding lookup (rows moved as raw bits) and its backward
// (atomic adds, so the order of the sums of repeated indices is not fixed), and the gather / scatter-add of
// elements along "lines" that index_select, index_add_, gather and scatter_add_ are built from
// (tensor/cpu/indexing.cpp's scheme: a view with stride 0 along the indexed dim, moved index * step).
#include <cstdint>

#include "tensor/cuda/convert.cuh"
#include "tensor/cuda/device_math.cuh"
#include "tensor/cuda/dtype_visit.cuh"
#include "tensor/cuda/indexing_kernels.h"
#include "tensor/cuda/parallel.cuh"

namespace syncgrad::cuda {
namespace {

template <class I>
void check_indices_typed(const I* index, int64_t count, int64_t size, int64_t* first_bad, cudaStream_t stream) {
  for_each_index(count, stream, [=] SG_LAMBDA(int64_t i) {
    const int64_t v = static_cast<int64_t>(index[i]);
    if (v < 0 || v >= size) atomic_min(first_bad, i);
  });
}

template <class U, class I>
void embedding_typed(U* out, const U* weight, const I* index, int64_t count, int64_t dim, cudaStream_t stream) {
  for_each_index(count * dim, stream, [=] SG_LAMBDA(int64_t e) {
    const int64_t m = e / dim, d = e % dim;
    out[e] = weight[static_cast<int64_t>(index[m]) * dim + d];
  });
}

template <class T, class I>
void embedding_backward_typed(T* grad_weight, const T* grad_out, const I* index, int64_t count, int64_t dim,
                              int64_t padding_idx, cudaStream_t stream) {
  for_each_index(count * dim, stream, [=] SG_LAMBDA(int64_t e) {
    const int64_t m = e / dim, d = e % dim;
    const int64_t row = static_cast<int64_t>(index[m]);
    if (row != padding_idx) atomic_add(&grad_weight[row * dim + d], grad_out[e]);
  });
}

template <class U, class I>
void gather_typed(U* out, const U* base, const I* index, int64_t step, const Geometry<3>& g, cudaStream_t stream) {
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    out[o.at[0]] = base[o.at[1] + static_cast<int64_t>(index[o.at[2]]) * step];
  });
}

template <class T, class I>
void scatter_add_typed(T* base, const T* src, const I* index, int64_t step, const Geometry<3>& g, cudaStream_t stream) {
  for_each_offset<3>(g, stream, [=] SG_LAMBDA(const Offsets<3>& o) {
    atomic_add(&base[o.at[0] + static_cast<int64_t>(index[o.at[2]]) * step], src[o.at[1]]);
  });
}

}  // namespace

void launch_check_indices(DType index_dtype, const void* index, int64_t count, int64_t size, int64_t* first_bad,
                          cudaStream_t stream) {
  visit_index(index_dtype,
              [&]<class I>() { check_indices_typed<I>(static_cast<const I*>(index), count, size, first_bad, stream); });
}

void launch_embedding(DType dtype, void* out, const void* weight, DType index_dtype, const void* index, int64_t count,
                      int64_t dim, cudaStream_t stream) {
  visit_bits(dtype, [&]<class U>() {
    visit_index(index_dtype, [&]<class I>() {
      embedding_typed<U, I>(static_cast<U*>(out), static_cast<const U*>(weight), static_cast<const I*>(index), count,
                            dim, stream);
    });
  });
}

void launch_embedding_backward(DType dtype, void* grad_weight, const void* grad_out, DType index_dtype,
                               const void* index, int64_t count, int64_t dim, int64_t padding_idx,
                               cudaStream_t stream) {
  visit_floating(dtype, [&]<class T>() {
    visit_index(index_dtype, [&]<class I>() {
      embedding_backward_typed<T, I>(static_cast<T*>(grad_weight), static_cast<const T*>(grad_out),
                                     static_cast<const I*>(index), count, dim, padding_idx, stream);
    });
  });
}

void launch_gather_lines(DType dtype, DType index_dtype, void* out, const void* line_base, const void* index,
                         int64_t step, const Geometry<3>& g, cudaStream_t stream) {
  visit_bits(dtype, [&]<class U>() {
    visit_index(index_dtype, [&]<class I>() {
      gather_typed<U, I>(static_cast<U*>(out), static_cast<const U*>(line_base), static_cast<const I*>(index), step, g,
                         stream);
    });
  });
}

void launch_scatter_add_lines(DType dtype, DType index_dtype, void* line_base, const void* src, const void* index,
                              int64_t step, const Geometry<3>& g, cudaStream_t stream) {
  visit_dtype(dtype, [&]<class T>() {
    visit_index(index_dtype, [&]<class I>() {
      scatter_add_typed<T, I>(static_cast<T*>(line_base), static_cast<const T*>(src), static_cast<const I*>(index),
                              step, g, stream);
    });
  });
}

}  // namespace syncgrad::cuda
