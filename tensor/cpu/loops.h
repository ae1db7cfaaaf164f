// Strided N-d iteration for CPU kernels. for_each_strided walks the common shape of K operands, each with
// its own byte strides (0 on broadcast dims), after merging dimensions that are contiguous in every operand,
// and calls `inner(ptrs, inner_strides, n)` once per innermost run of n elements.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {

template <size_t K>
struct StridedLayout {
  std::vector<int64_t> sizes;                      // merged sizes, innermost last
  std::array<std::vector<int64_t>, K> strides;     // byte strides per operand, same length as sizes
};

// Builds the merged layout of K operands that all have `shape` (operands are already expanded).
template <size_t K>
StridedLayout<K> make_layout(const Shape& shape, const std::array<const Tensor*, K>& operands) {
  StridedLayout<K> layout;
  std::array<std::vector<int64_t>, K> raw;
  for (size_t k = 0; k < K; ++k) {
    const Tensor& t = *operands[k];
    int64_t esize = static_cast<int64_t>(t.element_size());
    raw[k].resize(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) raw[k][d] = shape[d] == 1 ? 0 : t.strides()[d] * esize;
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!layout.sizes.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < K; ++k) {
        if (layout.strides[k].back() != raw[k][d] * shape[d]) {
          mergeable = false;
          break;
        }
      }
      if (mergeable) {
        layout.sizes.back() *= shape[d];
        for (size_t k = 0; k < K; ++k) layout.strides[k].back() = raw[k][d];
        continue;
      }
    }
    layout.sizes.push_back(shape[d]);
    for (size_t k = 0; k < K; ++k) layout.strides[k].push_back(raw[k][d]);
  }
  if (layout.sizes.empty()) {
    layout.sizes.push_back(1);
    for (size_t k = 0; k < K; ++k) layout.strides[k].push_back(0);
  }
  return layout;
}

template <size_t K, class Inner>
void for_each_strided(const Shape& shape, const std::array<char*, K>& bases,
                      const std::array<const Tensor*, K>& operands, Inner&& inner) {
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  StridedLayout<K> layout = make_layout<K>(shape, operands);
  const size_t nd = layout.sizes.size();
  const int64_t n = layout.sizes[nd - 1];
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = layout.strides[k][nd - 1];
  std::vector<int64_t> index(nd, 0);
  std::array<char*, K> ptrs = bases;
  while (true) {
    inner(ptrs, inner_strides, n);
    // Advance the outer index (all dims but the innermost), odometer style.
    size_t d = nd - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++index[d];
      for (size_t k = 0; k < K; ++k) ptrs[k] += layout.strides[k][d];
      if (index[d] < layout.sizes[d]) break;
      for (size_t k = 0; k < K; ++k) ptrs[k] -= layout.strides[k][d] * layout.sizes[d];
      index[d] = 0;
    }
  }
}

// Elements below which for_each_strided_parallel stays on the calling thread.
inline constexpr int64_t kStridedParallelGrain = 1 << 16;

// True when threads may write operand 0's elements concurrently: none of them is written twice (no zero stride
// on a dimension of the layout) and no other operand lives in its storage (a copy between overlapping views).
template <size_t K>
bool writes_apart(const StridedLayout<K>& layout, const std::array<const Tensor*, K>& operands) {
  for (size_t d = 0; d < layout.sizes.size(); ++d) {
    if (layout.strides[0][d] == 0 && layout.sizes[d] > 1) return false;
  }
  for (size_t k = 1; k < K; ++k) {
    if (operands[k]->impl()->storage() == operands[0]->impl()->storage()) return false;
  }
  return true;
}

// for_each_strided split over the intra-op threads: the merged layout's runs (or, when it is a single run,
// pieces of that run) are divided into contiguous ranges, one per thread. For kernels whose every element is
// independent of the others and whose operand 0 is written (copies, fills); where threads could write the same
// bytes (see writes_apart) it stays on the calling thread.
template <size_t K, class Inner>
void for_each_strided_parallel(const Shape& shape, const std::array<char*, K>& bases,
                               const std::array<const Tensor*, K>& operands, Inner&& inner) {
  int64_t total = 1;
  for (int64_t s : shape) total *= s;
  if (total < 2 * kStridedParallelGrain || get_num_threads() == 1) {
    for_each_strided<K>(shape, bases, operands, inner);
    return;
  }
  const StridedLayout<K> layout = make_layout<K>(shape, operands);
  if (!writes_apart(layout, operands)) {
    for_each_strided<K>(shape, bases, operands, inner);
    return;
  }
  const size_t nd = layout.sizes.size();
  const int64_t n = layout.sizes[nd - 1];
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = layout.strides[k][nd - 1];
  if (nd == 1) {  // one run: threads take pieces of it
    parallel_for(n, kStridedParallelGrain, [&](int64_t begin, int64_t end) {
      std::array<char*, K> ptrs = bases;
      for (size_t k = 0; k < K; ++k) ptrs[k] += begin * inner_strides[k];
      inner(ptrs, inner_strides, end - begin);
    });
    return;
  }
  const int64_t runs = total / n;
  parallel_for(runs, std::max<int64_t>(1, kStridedParallelGrain / n), [&](int64_t begin, int64_t end) {
    // The outer index of run `begin`, then odometer steps as in for_each_strided.
    std::vector<int64_t> index(nd - 1, 0);
    std::array<char*, K> ptrs = bases;
    int64_t rest = begin;
    for (size_t d = nd - 1; d-- > 0;) {
      index[d] = rest % layout.sizes[d];
      rest /= layout.sizes[d];
      for (size_t k = 0; k < K; ++k) ptrs[k] += index[d] * layout.strides[k][d];
    }
    for (int64_t run = begin; run < end; ++run) {
      inner(ptrs, inner_strides, n);
      for (size_t d = nd - 1; d-- > 0;) {
        ++index[d];
        for (size_t k = 0; k < K; ++k) ptrs[k] += layout.strides[k][d];
        if (index[d] < layout.sizes[d]) break;
        for (size_t k = 0; k < K; ++k) ptrs[k] -= layout.strides[k][d] * layout.sizes[d];
        index[d] = 0;
      }
    }
  });
}

}  // namespace syncgrad::cpu
