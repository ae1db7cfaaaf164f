// Strided N-d iteration for CPU kernels. for_each_strided walks the common shape of K operands, each with
// its own byte strides (0 on broadcast dims), after merging dimensions that are contiguous in every operand,
// and calls `inner(ptrs, inner_strides, n)` once per innermost run of n elements.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

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

}  // namespace syncgrad::cpu
