// CPU indexing kernels. All four ops walk a "slice base" view: the indexed tensor restrided to the shape of
// the iteration with stride 0 along `dim`, so element p of the view is the start of the line p[dim] moves
// along, and the kernel adds index[p] * stride(dim). index_select on a contiguous input copies whole
// rows (memcpy per selected slice). Index values are checked before anything is written.
#include <algorithm>
#include <cstring>

#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/indexing.h"
#include "tensor/ops/views.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

char* bytes(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// Throws IndexError naming the first index value outside [0, size).
template <class I>
void check_range(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  for_each_strided<1>(index.sizes(), {bytes(index)}, {&index},
                      [&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          int64_t v = *reinterpret_cast<const I*>(p[0] + i * s[0]);
                          if (v >= 0 && v < size) continue;
                          throw IndexError(std::string(op) + ": index " + std::to_string(v) +
                                           " is out of range for dimension " + std::to_string(dim) + " with size " +
                                           std::to_string(size) + " (indices must be in [0, " +
                                           std::to_string(size) + "))");
                        }
                      });
}

// `t` seen with `sizes` and t's strides except 0 along `dim`.
Tensor slice_base(const Tensor& t, const Shape& sizes, int64_t dim) {
  Shape strides = t.strides();
  strides[dim] = 0;
  return raw::as_strided(t, sizes, strides, t.storage_offset());
}

// A 1-D index broadcast to `sizes`: it varies along `dim` only.
Tensor broadcast_list_index(const Tensor& index, const Shape& sizes, int64_t dim) {
  Shape strides(sizes.size(), 0);
  strides[dim] = index.strides()[0];
  return raw::as_strided(index, sizes, strides, index.storage_offset());
}

// out[p] = base[p] moved index[p] steps of `step` elements; out, base and index all have out's shape.
template <class T, class I>
void gather_lines(const Tensor& out, const Tensor& base, const Tensor& index, int64_t step) {
  for_each_strided<3>(out.sizes(), {bytes(out), bytes(base), bytes(index)}, {&out, &base, &index},
                      [step](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          const T* line = reinterpret_cast<const T*>(p[1] + i * s[1]);
                          int64_t at = *reinterpret_cast<const I*>(p[2] + i * s[2]);
                          *reinterpret_cast<T*>(p[0] + i * s[0]) = line[at * step];
                        }
                      });
}

// base[p] moved index[p] steps of `step` elements += src[p]; base, src and index all have index's shape.
// Sequential on purpose: repeated indices make several p write the same element.
template <class T, class I>
void scatter_add_lines(const Tensor& base, const Tensor& src, const Tensor& index, int64_t step) {
  using M = opmath_t<T>;
  for_each_strided<3>(index.sizes(), {bytes(base), bytes(src), bytes(index)}, {&base, &src, &index},
                      [step](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          T* line = reinterpret_cast<T*>(p[0] + i * s[0]);
                          int64_t at = *reinterpret_cast<const I*>(p[2] + i * s[2]);
                          T& dst = line[at * step];
                          dst = static_cast<T>(M(dst) + M(*reinterpret_cast<const T*>(p[1] + i * s[1])));
                        }
                      });
}

// Contiguous input and output: each selected slice is `inner` consecutive elements, copied with memcpy.
template <class I>
void index_select_rows(const Tensor& out, const Tensor& input, int64_t dim, const Tensor& index) {
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < dim; ++k) outer *= input.sizes()[k];
  for (int64_t k = dim + 1; k < input.dim(); ++k) inner *= input.sizes()[k];
  const int64_t size = input.sizes()[dim];
  const int64_t count = index.numel();
  const int64_t row_bytes = inner * static_cast<int64_t>(input.element_size());
  const I* idx = static_cast<const I*>(index.data_ptr());
  const int64_t idx_stride = index.strides()[0];
  const char* src = bytes(input);
  char* dst = bytes(out);
  parallel_for(outer * count, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(row_bytes, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   int64_t o = r / count, i = r % count;
                   int64_t row = idx[i * idx_stride];
                   std::memcpy(dst + r * row_bytes, src + (o * size + row) * row_bytes, row_bytes);
                 }
               });
}

void index_select_kernel(const Tensor& out, const Tensor& input, int64_t dim, const Tensor& index) {
  visit_index(index.dtype(), "index_select", [&]<class I>() {
    check_range<I>("index_select", index, dim, input.sizes()[dim]);
    if (input.is_contiguous() && out.is_contiguous()) {
      index_select_rows<I>(out, input, dim, index);
      return;
    }
    Tensor base = slice_base(input, out.sizes(), dim);
    Tensor lines = broadcast_list_index(index, out.sizes(), dim);
    visit_all(out.dtype(), "index_select",
              [&]<class T>() { gather_lines<T, I>(out, base, lines, input.strides()[dim]); });
  });
}

void index_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  visit_index(index.dtype(), "index_add_", [&]<class I>() {
    check_range<I>("index_add_", index, dim, self.sizes()[dim]);
    Tensor base = slice_base(self, src.sizes(), dim);
    Tensor lines = broadcast_list_index(index, src.sizes(), dim);
    visit_all(self.dtype(), "index_add_",
              [&]<class T>() { scatter_add_lines<T, I>(base, src, lines, self.strides()[dim]); });
  });
}

void gather_kernel(const Tensor& out, const Tensor& input, int64_t dim, const Tensor& index) {
  visit_index(index.dtype(), "gather", [&]<class I>() {
    check_range<I>("gather", index, dim, input.sizes()[dim]);
    Tensor base = slice_base(input, index.sizes(), dim);
    visit_all(out.dtype(), "gather", [&]<class T>() { gather_lines<T, I>(out, base, index, input.strides()[dim]); });
  });
}

void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  visit_index(index.dtype(), "scatter_add_", [&]<class I>() {
    check_range<I>("scatter_add_", index, dim, self.sizes()[dim]);
    Tensor base = slice_base(self, index.sizes(), dim);
    Tensor src_part = raw::as_strided(src, index.sizes(), src.strides(), src.storage_offset());
    visit_all(self.dtype(), "scatter_add_",
              [&]<class T>() { scatter_add_lines<T, I>(base, src_part, index, self.strides()[dim]); });
  });
}

const KernelRegistrar reg_index_select(kernels::index_select, DeviceType::kCPU, &index_select_kernel);
const KernelRegistrar reg_index_add(kernels::index_add, DeviceType::kCPU, &index_add_kernel);
const KernelRegistrar reg_gather(kernels::gather, DeviceType::kCPU, &gather_kernel);
const KernelRegistrar reg_scatter_add(kernels::scatter_add, DeviceType::kCPU, &scatter_add_kernel);

}  // namespace
}  // namespace syncgrad::cpu
