// The mask a fused ReLU keeps for its backward: one bit per element, set where the ReLU's output is positive, so
// that the backward reads a bit per element instead of the whole output (for float32, 1/32 of the bytes). Each
// run of n elements (a (sample, channel) plane of batch norm) has words(n) 64-bit words of its own, so threads
// that own different runs never write the same word. Bit i % 64 of word i / 64 is element i; the unused high
// bits of a run's last word are zero. AVX-512 compares and masked loads where the build targets them, AVX2
// compares and movemasks 8 lanes at a time on AVX2-only CPUs (a Zen 3 EPYC: the scalar loop had the fused batch
// norm + ReLU at 0.72-0.84x the separate ops there), a scalar loop otherwise; all give the same bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/visit.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SYNCGRAD_RELU_MASK_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__F16C__)
#define SYNCGRAD_RELU_MASK_AVX2 1
#include <immintrin.h>
#endif

namespace syncgrad::cpu::relu_mask {

// The 64-bit words of the mask of a run of n elements.
inline int64_t words(int64_t n) { return (n + 63) / 64; }

#if defined(SYNCGRAD_RELU_MASK_AVX512)
// The lanes of y[0, 16) (those in `lanes`) that are greater than zero; NaN is not.
template <class T>
__mmask16 positive_lanes(const T* y, __mmask16 lanes) {
  __m512 v;
  if constexpr (std::is_same_v<T, float>) {
    v = _mm512_maskz_loadu_ps(lanes, y);
  } else {
    const __m256i bits = _mm256_maskz_loadu_epi16(lanes, y);
    if constexpr (std::is_same_v<T, half>) {
      v = _mm512_cvtph_ps(bits);
    } else {
      v = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
    }
  }
  return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
}

// out[0, 16) in `lanes` = dy where `keep` is set, else +0.
template <class T>
void select_lanes(const T* dy, __mmask16 keep, __mmask16 lanes, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(out, lanes, _mm512_maskz_loadu_ps(keep & lanes, dy));
  } else {
    _mm256_mask_storeu_epi16(out, lanes, _mm256_maskz_loadu_epi16(keep & lanes, dy));
  }
}

#elif defined(SYNCGRAD_RELU_MASK_AVX2)
// The lanes of y[0, 8) that are greater than zero, as the low 8 bits; NaN is not.
template <class T>
uint64_t positive_lanes(const T* y) {
  __m256 v;
  if constexpr (std::is_same_v<T, float>) {
    v = _mm256_loadu_ps(y);
  } else {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y));
    if constexpr (std::is_same_v<T, half>) {
      v = _mm256_cvtph_ps(bits);
    } else {
      v = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    }
  }
  return static_cast<uint64_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ)));
}

// out[0, 8) = dy where bit i of `keep` (its low 8 bits) is set, else +0.
template <class T>
void select_lanes(const T* dy, uint64_t keep, T* out) {
  const int byte = static_cast<int>(keep & 0xFF);
  if constexpr (std::is_same_v<T, float>) {
    const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i kept = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(byte), lane_bits), lane_bits);
    _mm256_storeu_ps(out, _mm256_and_ps(_mm256_castsi256_ps(kept), _mm256_loadu_ps(dy)));
  } else {
    const __m128i lane_bits = _mm_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128);
    const __m128i kept = _mm_cmpeq_epi16(_mm_and_si128(_mm_set1_epi16(static_cast<short>(byte)), lane_bits), lane_bits);
    const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(dy));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_and_si128(kept, values));
  }
}
#endif

// bits[0, words(n)) = the mask of y[0, n): bit i set where y[i] > 0.
template <class T>
void pack(const T* y, int64_t n, uint64_t* bits) {
#if defined(SYNCGRAD_RELU_MASK_AVX512)
  if constexpr (!std::is_same_v<T, double>) {
    for (int64_t w = 0; w < words(n); ++w) {
      uint64_t word = 0;
      for (int part = 0; part < 4; ++part) {
        const int64_t start = w * 64 + part * 16;
        if (start >= n) break;
        const int64_t left = n - start;
        const __mmask16 lanes = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
        word |= static_cast<uint64_t>(positive_lanes(y + start, lanes)) << (part * 16);
      }
      bits[w] = word;
    }
    return;
  }
#endif
  using M = opmath_t<T>;
  for (int64_t w = 0; w < words(n); ++w) {
    uint64_t word = 0;
    int64_t i = w * 64;
#if defined(SYNCGRAD_RELU_MASK_AVX2)
    if constexpr (!std::is_same_v<T, double>) {
      for (; i + 8 <= std::min(n, w * 64 + 64); i += 8) word |= positive_lanes(y + i) << (i - w * 64);
    }
#endif
    for (; i < std::min(n, w * 64 + 64); ++i) {
      word |= static_cast<uint64_t>(convert<M>(y[i]) > M(0)) << (i - w * 64);
    }
    bits[w] = word;
  }
}

// out[0, n) = dy[i] where bit i of the mask is set, else +0.
template <class T>
void select(const T* dy, const uint64_t* bits, int64_t n, T* out) {
#if defined(SYNCGRAD_RELU_MASK_AVX512)
  if constexpr (!std::is_same_v<T, double>) {
    for (int64_t start = 0; start < n; start += 16) {
      const int64_t left = n - start;
      const __mmask16 lanes = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
      const __mmask16 keep = static_cast<__mmask16>(bits[start / 64] >> (start % 64));
      select_lanes(dy + start, keep, lanes, out + start);
    }
    return;
  }
#endif
  int64_t i = 0;
#if defined(SYNCGRAD_RELU_MASK_AVX2)
  if constexpr (!std::is_same_v<T, double>) {
    for (; i + 8 <= n; i += 8) select_lanes(dy + i, bits[i / 64] >> (i % 64), out + i);
  }
#endif
  for (; i < n; ++i) out[i] = (bits[i / 64] >> (i % 64)) & 1 ? dy[i] : T(0);
}

}  // namespace syncgrad::cpu::relu_mask
