// The CNNs' 2x2 max pooling with stride 2 on AVX-512: one output row at a time, 16 windows per step, over
// float, bfloat16 and float16 planes. The half types are widened to float in registers and narrowed back
// exactly (every value stored is one that was loaded, or zero), so no plane is converted in memory.
//   forward:  the maxima of each window and their positions (ties keep the first; NaN wins).
//   backward: each gradient written to its window's argmax and zero to the window's three other elements. The
//             2x2 blocks do not overlap, so this is the scatter-add of any pooling whose argmaxes all lie in
//             their own window's 2x2 block; a row where one does not is reported back to the caller.
#pragma once

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SYNCGRAD_MAX_POOL_2X2_AVX512 1
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensor/cpu/visit.h"

namespace syncgrad::cpu::max_pool_2x2 {

// 16 lanes (those in `mask`; the others zero) of T widened to float.
template <class T>
__m512 load(const T* p, __mmask16 mask) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(mask, p);
  } else {
    const __m256i bits = _mm256_maskz_loadu_epi16(mask, p);
    if constexpr (std::is_same_v<T, half>) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
}

// Stores the lanes in `mask` as T; exact for values that came from T.
template <class T>
void store(T* p, __mmask16 mask, __m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, mask, v);
  } else if constexpr (std::is_same_v<T, half>) {
    _mm256_mask_storeu_epi16(p, mask, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    _mm256_mask_storeu_epi16(p, mask, _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
  }
}

// The low n bits set, n <= 32.
inline uint32_t low_bits(int64_t n) { return n >= 32 ? ~0u : (1u << n) - 1; }

inline __m512i even_lanes() { return _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30); }

// One output row: the windows over input rows top and bottom (w columns apart in the plane; the top row starts
// at plane offset row_start) into best (ow) and their plane offsets into where (ow).
template <class T>
void forward_row(const T* top, const T* bottom, T* best, int64_t* where, int64_t ow, int64_t w, int64_t row_start) {
  const __m512i even = even_lanes();
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i right = _mm512_set1_epi32(1), below = _mm512_set1_epi32(static_cast<int32_t>(w)),
                below_right = _mm512_set1_epi32(static_cast<int32_t>(w) + 1);
  for (int64_t ox = 0; ox < ow; ox += 16) {
    const int64_t n = std::min<int64_t>(16, ow - ox);
    const uint32_t in_mask = low_bits(2 * n);  // 2n input columns
    const auto lo = static_cast<__mmask16>(in_mask), hi = static_cast<__mmask16>(in_mask >> 16);
    const __m512 t0 = load(top + 2 * ox, lo), t1 = load(top + 2 * ox + 16, hi);
    const __m512 b0 = load(bottom + 2 * ox, lo), b1 = load(bottom + 2 * ox + 16, hi);
    __m512 m = _mm512_permutex2var_ps(t0, even, t1);
    __m512i at = _mm512_setzero_si512();
    auto visit = [&](__m512 v, __m512i offset) {
      const __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      m = _mm512_mask_blend_ps(take, m, v);
      at = _mm512_mask_blend_epi32(take, at, offset);
    };
    visit(_mm512_permutex2var_ps(t0, odd, t1), right);
    visit(_mm512_permutex2var_ps(b0, even, b1), below);
    visit(_mm512_permutex2var_ps(b0, odd, b1), below_right);
    at = _mm512_add_epi32(at, _mm512_add_epi32(even, _mm512_set1_epi32(static_cast<int32_t>(2 * ox))));
    const auto out_mask = static_cast<__mmask16>(low_bits(n));
    store(best + ox, out_mask, m);
    const __m512i start = _mm512_set1_epi64(row_start);
    _mm512_mask_storeu_epi64(where + ox, static_cast<__mmask8>(out_mask),
                             _mm512_add_epi64(start, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(at))));
    _mm512_mask_storeu_epi64(where + ox + 8, static_cast<__mmask8>(out_mask >> 8),
                             _mm512_add_epi64(start, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(at, 1))));
  }
}

// One output row's gradients gy (ow) written to columns [0, 2 ow) of input rows top and bottom, under the row's
// argmax plane offsets where (ow; row_start as in forward_row). Returns false, having written part of the two
// rows, when an argmax lies outside its window's 2x2 block.
template <class T>
bool backward_row(const T* gy, const int64_t* where, T* top, T* bottom, int64_t ow, int64_t w, int64_t row_start) {
  const __m512i even = even_lanes();
  const __m512i right = _mm512_set1_epi32(1), below = _mm512_set1_epi32(static_cast<int32_t>(w)),
                below_right = _mm512_set1_epi32(static_cast<int32_t>(w) + 1);
  // Lanes a0 b0 a1 b1 ... of two vectors a, b: their first halves, then their second halves.
  const __m512i interleave_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i interleave_hi = _mm512_add_epi32(interleave_lo, _mm512_set1_epi32(8));
  for (int64_t ox = 0; ox < ow; ox += 16) {
    const int64_t n = std::min<int64_t>(16, ow - ox);
    const auto out_mask = static_cast<__mmask16>(low_bits(n));
    const __m512 g = load(gy + ox, out_mask);
    // Each argmax relative to its window's top-left element (saturated: -1 marks a window without input).
    const __m512i first = _mm512_set1_epi64(row_start + 2 * ox);
    const __m256i rel_lo = _mm512_cvtsepi64_epi32(
        _mm512_sub_epi64(_mm512_maskz_loadu_epi64(static_cast<__mmask8>(out_mask), where + ox), first));
    const __m256i rel_hi = _mm512_cvtsepi64_epi32(
        _mm512_sub_epi64(_mm512_maskz_loadu_epi64(static_cast<__mmask8>(out_mask >> 8), where + ox + 8), first));
    const __m512i rel = _mm512_sub_epi32(_mm512_inserti64x4(_mm512_castsi256_si512(rel_lo), rel_hi, 1), even);
    const __mmask16 at_top_left = _mm512_cmpeq_epi32_mask(rel, _mm512_setzero_si512()),
                    at_right = _mm512_cmpeq_epi32_mask(rel, right), at_below = _mm512_cmpeq_epi32_mask(rel, below),
                    at_below_right = _mm512_cmpeq_epi32_mask(rel, below_right);
    if (((at_top_left | at_right | at_below | at_below_right) & out_mask) != out_mask) return false;
    const __m512 v0 = _mm512_maskz_mov_ps(at_top_left, g), v1 = _mm512_maskz_mov_ps(at_right, g);
    const __m512 v2 = _mm512_maskz_mov_ps(at_below, g), v3 = _mm512_maskz_mov_ps(at_below_right, g);
    const uint32_t in_mask = low_bits(2 * n);
    const auto lo = static_cast<__mmask16>(in_mask), hi = static_cast<__mmask16>(in_mask >> 16);
    store(top + 2 * ox, lo, _mm512_permutex2var_ps(v0, interleave_lo, v1));
    store(top + 2 * ox + 16, hi, _mm512_permutex2var_ps(v0, interleave_hi, v1));
    store(bottom + 2 * ox, lo, _mm512_permutex2var_ps(v2, interleave_lo, v3));
    store(bottom + 2 * ox + 16, hi, _mm512_permutex2var_ps(v2, interleave_hi, v3));
  }
  return true;
}

// A whole input plane (h, w) of gradients from the output plane (oh, ow): every element written, the ones no
// 2x2 block covers (the last row or column of an odd size, or beyond the output) zero. Returns false, having
// written part of the plane, when an argmax lies outside its window's 2x2 block.
template <class T>
bool backward_plane(const T* gy, const int64_t* where, T* gx, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  if (2 * oh > h || 2 * ow > w) return false;
  for (int64_t oy = 0; oy < oh; ++oy) {
    T* top = gx + 2 * oy * w;
    if (!backward_row(gy + oy * ow, where + oy * ow, top, top + w, ow, w, 2 * oy * w)) return false;
    std::fill(top + 2 * ow, top + w, T(0));
    std::fill(top + w + 2 * ow, top + 2 * w, T(0));
  }
  std::fill(gx + 2 * oh * w, gx + h * w, T(0));
  return true;
}

}  // namespace syncgrad::cpu::max_pool_2x2

#endif
