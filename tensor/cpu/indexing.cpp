// CPU indexing kernels. All four ops walk the lines the front-end built (kernels::IndexLines in
// tensor/ops/indexing.h): element p of the slice base is the start of the line p[dim] moves along, and the
// kernel adds index[p] * stride(dim). index_select on a contiguous input copies whole rows (memcpy per
// selected slice). Index values are checked before anything is written.
#include <algorithm>
#include <cstring>

#include "tensor/cpu/loops.h"
#include "tensor/cpu/visit.h"
#include "tensor/ops/indexing.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

char* bytes(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// Throws IndexError naming the first index value outside [0, size).
template <class I>
void check_range(const kernels::IndexLines& lines) {
  const Tensor& index = lines.index;
  const int64_t size = lines.size();
  for_each_strided<1>(index.sizes(), {bytes(index)}, {&index},
                      [&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          int64_t v = *reinterpret_cast<const I*>(p[0] + i * s[0]);
                          if (v >= 0 && v < size) continue;
                          throw IndexError(std::string(lines.op) + ": index " + std::to_string(v) +
                                           " is out of range for dimension " + std::to_string(lines.dim) +
                                           " with size " + std::to_string(size) + " (indices must be in [0, " +
                                           std::to_string(size) + "))");
                        }
                      });
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

// base[p] moved index[p] steps of `step` elements += src[p]; base, src and index all have src's shape.
// Sequential on purpose: repeated indices make several p write the same element.
template <class T, class I>
void scatter_add_lines(const Tensor& base, const Tensor& src, const Tensor& index, int64_t step) {
  using M = opmath_t<T>;
  for_each_strided<3>(src.sizes(), {bytes(base), bytes(src), bytes(index)}, {&base, &src, &index},
                      [step](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          T* line = reinterpret_cast<T*>(p[0] + i * s[0]);
                          int64_t at = *reinterpret_cast<const I*>(p[2] + i * s[2]);
                          T& dst = line[at * step];
                          dst = static_cast<T>(M(dst) + M(*reinterpret_cast<const T*>(p[1] + i * s[1])));
                        }
                      });
}

// index_select of a contiguous input into a contiguous output: each selected slice is `inner` consecutive
// elements, copied with memcpy.
template <class I>
void index_select_rows(const Tensor& out, const kernels::IndexLines& lines) {
  const Tensor& input = lines.indexed;
  const Tensor& index = lines.index;
  const int64_t dim = lines.dim;
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

// index_select and gather.
void gather_kernel(const Tensor& out, const kernels::IndexLines& lines) {
  visit_index(lines.index.dtype(), lines.op, [&]<class I>() {
    check_range<I>(lines);
    visit_all(out.dtype(), lines.op,
              [&]<class T>() { gather_lines<T, I>(out, lines.base, lines.line_index, lines.step()); });
  });
}

void index_select_kernel(const Tensor& out, const kernels::IndexLines& lines) {
  if (!lines.indexed.is_contiguous() || !out.is_contiguous()) {
    gather_kernel(out, lines);
    return;
  }
  visit_index(lines.index.dtype(), lines.op, [&]<class I>() {
    check_range<I>(lines);
    index_select_rows<I>(out, lines);
  });
}

// index_add_ and scatter_add_.
void scatter_add_kernel(const kernels::IndexLines& lines, const Tensor& src) {
  visit_index(lines.index.dtype(), lines.op, [&]<class I>() {
    check_range<I>(lines);
    visit_all(lines.indexed.dtype(), lines.op,
              [&]<class T>() { scatter_add_lines<T, I>(lines.base, src, lines.line_index, lines.step()); });
  });
}

const KernelRegistrar reg_index_select(kernels::index_select, DeviceType::kCPU, &index_select_kernel);
const KernelRegistrar reg_index_add(kernels::index_add, DeviceType::kCPU, &scatter_add_kernel);
const KernelRegistrar reg_gather(kernels::gather, DeviceType::kCPU, &gather_kernel);
const KernelRegistrar reg_scatter_add(kernels::scatter_add, DeviceType::kCPU, &scatter_add_kernel);

}  // namespace
}  // namespace syncgrad::cpu
