// The rows of float32 convolutions with horizontal stride 2 on AVX-512: im2col's gather out[ox] = in[2 * ox + x0]
// and col2im's scatter-add out[2 * ox + x0] += in[ox], 16 outputs per step, with the positions outside the
// input row [0, w) read as zeros or left alone through masked loads and stores. Written element by element,
// these rows (8 or 16 outputs in ResNet-20's stride-2 layers) took half of those layers' time.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace syncgrad::cpu::stride2 {

#if defined(__AVX512F__)
constexpr bool kAvailable = true;

// The 16-lane mask of the lanes l with first + l in [0, limit).
inline __mmask16 lanes_in(int64_t first, int64_t limit) {
  const int64_t lo = std::max<int64_t>(0, -first), hi = std::min<int64_t>(16, limit - first);
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << (hi - lo)) - 1u) << lo);
}

// in + offset for an offset that may point before the row: only lanes inside it are ever read or written.
inline const float* at(const float* in, int64_t offset) {
  return reinterpret_cast<const float*>(reinterpret_cast<intptr_t>(in) + offset * int64_t{sizeof(float)});
}
inline float* at(float* out, int64_t offset) {
  return reinterpret_cast<float*>(reinterpret_cast<intptr_t>(out) + offset * int64_t{sizeof(float)});
}

// out[ox] = in[2 * ox + x0] for ox in [0, ow), 0 where 2 * ox + x0 lies outside [0, w).
inline void gather(const float* in, int64_t x0, int64_t w, int64_t ow, float* out) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t ox = 0; ox < ow; ox += 16) {
    const int64_t first = 2 * ox + x0;
    const __m512 a = _mm512_maskz_loadu_ps(lanes_in(first, w), at(in, first));
    const __m512 b = _mm512_maskz_loadu_ps(lanes_in(first + 16, w), at(in, first + 16));
    _mm512_mask_storeu_ps(out + ox, lanes_in(ox, ow), _mm512_permutex2var_ps(a, even, b));
  }
}

// out[2 * ox + x0] += in[ox] for ox in [0, ow) where 2 * ox + x0 lies in [0, w).
inline void scatter_add(const float* in, int64_t x0, int64_t w, int64_t ow, float* out) {
  // Lane 2k takes in[k] (in[8 + k] for the upper half), lane 2k + 1 a zero (lane 0 of the zero operand).
  const __m512i lower = _mm512_setr_epi32(0, 16, 1, 16, 2, 16, 3, 16, 4, 16, 5, 16, 6, 16, 7, 16);
  const __m512i upper = _mm512_setr_epi32(8, 16, 9, 16, 10, 16, 11, 16, 12, 16, 13, 16, 14, 16, 15, 16);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t ox = 0; ox < ow; ox += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(lanes_in(ox, ow), in + ox);
    const int64_t first = 2 * ox + x0;
    const __mmask16 m0 = lanes_in(first, w), m1 = lanes_in(first + 16, w);
    float* p0 = at(out, first);
    float* p1 = at(out, first + 16);
    _mm512_mask_storeu_ps(p0, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, p0), _mm512_permutex2var_ps(v, lower, zero)));
    _mm512_mask_storeu_ps(p1, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, p1), _mm512_permutex2var_ps(v, upper, zero)));
  }
}
#else
constexpr bool kAvailable = false;
inline void gather(const float*, int64_t, int64_t, int64_t, float*) {}
inline void scatter_add(const float*, int64_t, int64_t, int64_t, float*) {}
#endif

}  // namespace syncgrad::cpu::stride2
