// Winograd tile transforms for 3x3 convolutions (tensor/cpu/winograd.cpp), each applied to 16 tiles at once:
// one vector lane per tile, so every transform is a handful of vector adds. Two minimal filtering algorithms
// share one input transform:
//   F(2x2, 3x3)  forward:  Y (2x2) = A^T [(G g G^T) . (B^T d B)] A    g: 3x3 filter, d: 4x4 input patch
//   F(3x3, 2x2)  weights:  Y (3x3) = C^T [(H e H^T) . (B^T d B)] C    e: 2x2 block of the output gradient
// with
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]                        H = [1 0; .5 .5; .5 -.5; 0 -1]
//   C^T = [1 1 1 0; 0 1 -1 0; 0 1 1 1]
// The 16 products (index xi * 4 + nu of the 4x4 transformed tile) are independent, so summing them over input
// channels (forward) or over tiles (weights) is 16 GEMMs. Where a vector's tiles are runs of 16, 8 or 4 tiles
// side by side (images 32 pixels wide or a multiple, 16 or 8 wide) they are read and written with whole-vector
// loads and shuffles; otherwise tile by tile.
#pragma once

#include <cstdint>
#include <cstring>

#include "tensor/cpu/conv_gemm.h"

namespace syncgrad::cpu::winograd {

using V = conv_gemm::Vec<float>;
typedef float H __attribute__((vector_size(32)));  // half a vector: the 8 pixels of a run of 4 tiles
inline constexpr int64_t kLanes = conv_gemm::kLanes<float>;  // tiles per vector
static_assert(kLanes == 16, "the Winograd kernels assume 16-float vectors");

// Lanes 2l + shift of the 32 floats held in (lo, hi): the even (shift 0) or odd (shift 1) elements.
template <int Shift>
inline V deinterleave(const V& lo, const V& hi) {
  return __builtin_shufflevector(lo, hi, 0 + Shift, 2 + Shift, 4 + Shift, 6 + Shift, 8 + Shift, 10 + Shift, 12 + Shift,
                                 14 + Shift, 16 + Shift, 18 + Shift, 20 + Shift, 22 + Shift, 24 + Shift, 26 + Shift,
                                 28 + Shift, 30 + Shift);
}

// The first (Half 0) or second (Half 1) 16 floats of the interleaving even[0], odd[0], even[1], odd[1], ...
template <int Half>
inline V interleave(const V& even, const V& odd) {
  constexpr int b = Half * 8;
  return __builtin_shufflevector(even, odd, b + 0, b + 16, b + 1, b + 17, b + 2, b + 18, b + 3, b + 19, b + 4, b + 20,
                                 b + 5, b + 21, b + 6, b + 22, b + 7, b + 23);
}

// Where the 16 tiles of a vector lie. The tile offsets (one per tile, at `offset`) point at a tile's pixel
// (0, 0); tiles side by side in a row are 2 pixels apart. With Segment = 16, 8 or 4 the vector is 16 / Segment
// runs of Segment tiles side by side (offset[q * Segment] is run q's first tile), read with whole-vector loads
// and shuffles that touch no pixel beyond the run's 2 * Segment + Shift; with Segment = 0 each tile is read on
// its own. take() returns pixel Shift (0..3) of every tile: lane l = base[offset(l) + Shift].
template <int Segment, int Shift>
inline V take(const float* base, const int32_t* offset) {
  constexpr int odd = Shift % 2, even = Shift - odd;
  if constexpr (Segment == 16) {
    const float* p = base + offset[0] + even;
    return deinterleave<odd>(conv_gemm::load<float>(p), conv_gemm::load<float>(p + kLanes));
  } else if constexpr (Segment == 8) {
    return deinterleave<odd>(conv_gemm::load<float>(base + offset[0] + even),
                             conv_gemm::load<float>(base + offset[8] + even));
  } else if constexpr (Segment == 4) {
    H run[4];  // the 8 pixels of each run from `even`
    for (int q = 0; q < 4; ++q) std::memcpy(&run[q], base + offset[4 * q] + even, sizeof(H));
    const H lo = __builtin_shufflevector(run[0], run[1], odd, 2 + odd, 4 + odd, 6 + odd, 8 + odd, 10 + odd, 12 + odd,
                                         14 + odd);
    const H hi = __builtin_shufflevector(run[2], run[3], odd, 2 + odd, 4 + odd, 6 + odd, 8 + odd, 10 + odd, 12 + odd,
                                         14 + odd);
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  } else {
    V v;
    for (int l = 0; l < kLanes; ++l) v[l] = base[offset[l] + Shift];
    return v;
  }
}

// base[offset(tile) + 0] = left[tile], base[offset(tile) + 1] = right[tile] for the first `lanes` tiles (all of
// them when segmented).
template <int Segment>
inline void put_pairs(float* base, const int32_t* offset, const V& left, const V& right, int lanes) {
  const V first = interleave<0>(left, right), second = interleave<1>(left, right);  // tiles 0-7, 8-15
  if constexpr (Segment == 16) {
    conv_gemm::store<float>(base + offset[0], first);
    conv_gemm::store<float>(base + offset[0] + kLanes, second);
  } else if constexpr (Segment == 8) {
    conv_gemm::store<float>(base + offset[0], first);
    conv_gemm::store<float>(base + offset[8], second);
  } else if constexpr (Segment == 4) {
    const H quarters[4] = {__builtin_shufflevector(first, first, 0, 1, 2, 3, 4, 5, 6, 7),
                           __builtin_shufflevector(first, first, 8, 9, 10, 11, 12, 13, 14, 15),
                           __builtin_shufflevector(second, second, 0, 1, 2, 3, 4, 5, 6, 7),
                           __builtin_shufflevector(second, second, 8, 9, 10, 11, 12, 13, 14, 15)};
    for (int q = 0; q < 4; ++q) std::memcpy(base + offset[4 * q], &quarters[q], sizeof(H));
  } else {
    for (int l = 0; l < lanes; ++l) {
      base[offset[l]] = left[l];
      base[offset[l] + 1] = right[l];
    }
  }
}

// d[r * 4 + j] = pixel (r, j) of the 4x4 patch of each of 16 tiles; `stride` is the distance between rows.
template <int Segment>
inline void load_patches(const float* base, int64_t stride, const int32_t* offset, V* d) {
  for (int r = 0; r < 4; ++r) {
    const float* row = base + r * stride;
    d[r * 4 + 0] = take<Segment, 0>(row, offset);
    d[r * 4 + 1] = take<Segment, 1>(row, offset);
    d[r * 4 + 2] = take<Segment, 2>(row, offset);
    d[r * 4 + 3] = take<Segment, 3>(row, offset);
  }
}

// e[a * 2 + b] = pixel (a, b) of the 2x2 block of each of 16 tiles.
template <int Segment>
inline void load_blocks(const float* base, int64_t stride, const int32_t* offset, V* e) {
  for (int a = 0; a < 2; ++a) {
    e[a * 2 + 0] = take<Segment, 0>(base + a * stride, offset);
    e[a * 2 + 1] = take<Segment, 1>(base + a * stride, offset);
  }
}

// The inverse of load_blocks: writes y[a * 2 + b] to the 2x2 blocks of the first `lanes` tiles.
template <int Segment>
inline void store_blocks(float* base, int64_t stride, const int32_t* offset, const V* y, int lanes) {
  for (int a = 0; a < 2; ++a) put_pairs<Segment>(base + a * stride, offset, y[a * 2], y[a * 2 + 1], lanes);
}

// v = B^T d B, in place over the 16 vectors.
inline void input_transform(V* d) {
  for (int j = 0; j < 4; ++j) {
    const V d0 = d[j], d1 = d[4 + j], d2 = d[8 + j], d3 = d[12 + j];
    d[j] = d0 - d2;
    d[4 + j] = d1 + d2;
    d[8 + j] = d2 - d1;
    d[12 + j] = d1 - d3;
  }
  for (int i = 0; i < 4; ++i) {
    V* r = d + i * 4;
    const V t0 = r[0], t1 = r[1], t2 = r[2], t3 = r[3];
    r[0] = t0 - t2;
    r[1] = t1 + t2;
    r[2] = t2 - t1;
    r[3] = t1 - t3;
  }
}

// y[a * 2 + b] = (A^T m A)[a][b] for the 16 transformed products m.
inline void output_transform(const V* m, V* y) {
  V s[8];
  for (int j = 0; j < 4; ++j) {
    s[j] = m[j] + m[4 + j] + m[8 + j];
    s[4 + j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
  for (int a = 0; a < 2; ++a) {
    const V* r = s + a * 4;
    y[a * 2 + 0] = r[0] + r[1] + r[2];
    y[a * 2 + 1] = r[1] - r[2] - r[3];
  }
}

// u = H e H^T for the 2x2 blocks e[a * 2 + b].
inline void gradient_transform(const V* e, V* u) {
  V h[8];
  for (int b = 0; b < 2; ++b) {
    h[b] = e[b];
    h[2 + b] = 0.5f * (e[b] + e[2 + b]);
    h[4 + b] = 0.5f * (e[b] - e[2 + b]);
    h[6 + b] = -e[2 + b];
  }
  for (int i = 0; i < 4; ++i) {
    const V h0 = h[i * 2], h1 = h[i * 2 + 1];
    u[i * 4 + 0] = h0;
    u[i * 4 + 1] = 0.5f * (h0 + h1);
    u[i * 4 + 2] = 0.5f * (h0 - h1);
    u[i * 4 + 3] = -h1;
  }
}

// The filter transform G g G^T of one 3x3 filter (g row-major) into u[16].
inline void filter_transform(const float* g, float* u) {
  float t[12];  // G g: 4 x 3
  for (int c = 0; c < 3; ++c) {
    t[c] = g[c];
    t[3 + c] = 0.5f * (g[c] + g[3 + c] + g[6 + c]);
    t[6 + c] = 0.5f * (g[c] - g[3 + c] + g[6 + c]);
    t[9 + c] = g[6 + c];
  }
  for (int r = 0; r < 4; ++r) {
    const float* x = t + r * 3;
    u[r * 4 + 0] = x[0];
    u[r * 4 + 1] = 0.5f * (x[0] + x[1] + x[2]);
    u[r * 4 + 2] = 0.5f * (x[0] - x[1] + x[2]);
    u[r * 4 + 3] = x[2];
  }
}

// The 3x3 weight gradient C^T m C of one filter from its 16 summed products m (stride `step` apart).
inline void weight_output_transform(const float* m, int64_t step, float* out) {
  float s[12];  // C^T m: 3 x 4
  for (int j = 0; j < 4; ++j) {
    const float m0 = m[j * step], m1 = m[(4 + j) * step], m2 = m[(8 + j) * step], m3 = m[(12 + j) * step];
    s[j] = m0 + m1 + m2;
    s[4 + j] = m1 - m2;
    s[8 + j] = m1 + m2 + m3;
  }
  for (int r = 0; r < 3; ++r) {
    const float* x = s + r * 4;
    out[r * 3 + 0] = x[0] + x[1] + x[2];
    out[r * 3 + 1] = x[1] - x[2];
    out[r * 3 + 2] = x[1] + x[2] + x[3];
  }
}

}  // namespace syncgrad::cpu::winograd
