// Host-side preparation of kernel geometries (private to tensor/cuda/): turns the shape and strides of K
// same-shaped operands into as few dimensions as possible and launches once per piece of at most kMaxDims
// dimensions.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tensor/cuda/launch.h"
#include "tensor/tensor.h"

namespace syncgrad::cuda {

enum class LayoutMode {
  kOrdered,       // element i of every operand is matched (copy): dims may be permuted for all operands alike
  kWriteOnceAny,  // fill: order is irrelevant and dims where operand 0 has stride 0 need one pass only
};

// Calls launch(bases, geometry) for each piece of the iteration space of `operands` (all of shape `shape`,
// already expanded), with bases[k] the address of the piece's first element of operand k.
//  - size-1 dims are dropped; dims are ordered by operand 0's stride, largest first (so writes to operand 0
//    are as sequential as they can be), and neighbours that are contiguous in every operand are merged;
//  - whatever is left beyond kMaxDims dims is iterated on the host, one launch per outer index.
template <int K, class Launch>
void for_each_geometry(const Shape& shape, const std::array<char*, K>& bases,
                       const std::array<const Tensor*, K>& operands, LayoutMode mode, Launch&& launch) {
  struct Dim {
    int64_t size;
    std::array<int64_t, K> strides;
  };
  std::vector<Dim> dims;
  dims.reserve(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    Dim dim{shape[d], {}};
    for (int k = 0; k < K; ++k) dim.strides[k] = operands[k]->strides()[d];
    if (mode == LayoutMode::kWriteOnceAny && dim.strides[0] == 0) continue;
    dims.push_back(dim);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dim& a, const Dim& b) { return std::llabs(a.strides[0]) > std::llabs(b.strides[0]); });
  std::vector<Dim> merged;
  for (const Dim& dim : dims) {
    if (!merged.empty()) {
      Dim& outer = merged.back();
      bool mergeable = true;
      for (int k = 0; k < K; ++k) mergeable = mergeable && outer.strides[k] == dim.strides[k] * dim.size;
      if (mergeable) {
        outer.size *= dim.size;
        outer.strides = dim.strides;
        continue;
      }
    }
    merged.push_back(dim);
  }
  if (merged.empty()) {
    Dim one{1, {}};
    for (int k = 0; k < K; ++k) one.strides[k] = 1;
    merged.push_back(one);
  }

  const size_t n = merged.size();
  const size_t outer_dims = n > static_cast<size_t>(kMaxDims) ? n - kMaxDims : 0;
  Geometry<K> g;
  g.ndim = static_cast<int>(n - outer_dims);
  g.numel = 1;
  for (int d = 0; d < g.ndim; ++d) {
    const Dim& dim = merged[outer_dims + d];
    g.sizes[d] = dim.size;
    g.numel *= dim.size;
    for (int k = 0; k < K; ++k) g.strides[k][d] = dim.strides[k];
  }
  g.contiguous = g.ndim == 1;
  for (int k = 0; k < K; ++k) g.contiguous = g.contiguous && g.strides[k][0] == 1;

  std::array<int64_t, K> element_bytes;
  for (int k = 0; k < K; ++k) element_bytes[k] = static_cast<int64_t>(operands[k]->element_size());
  std::vector<int64_t> index(outer_dims, 0);
  std::array<char*, K> ptrs = bases;
  while (true) {
    launch(ptrs, g);
    // Advance the host-side outer index, odometer style.
    size_t d = outer_dims;
    while (true) {
      if (d == 0) return;
      --d;
      ++index[d];
      for (int k = 0; k < K; ++k) ptrs[k] += merged[d].strides[k] * element_bytes[k];
      if (index[d] < merged[d].size) break;
      for (int k = 0; k < K; ++k) ptrs[k] -= merged[d].strides[k] * element_bytes[k] * merged[d].size;
      index[d] = 0;
    }
  }
}

}  // namespace syncgrad::cuda
