// The mask a fused ReLU keeps for its backward: one bit per element, set where the ReLU's output is positive, so
// that the backward reads a bit per element instead of the whole output (for float32, 1/32 of the bytes). Each
// run of n elements (a (sample, channel) plane of batch norm) has words(n) 64-bit words of its own, so threads
// that own different runs never write the same word. Bit i % 64 of word i / 64 is element i; the unused high
// bits of a run's last word are zero. AVX-512 compares and masked loads where the build targets them, a
// scalar loop otherwise; both give the same bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/visit.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SYNCGRAD_RELU_MASK_AVX512 1
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
    for (int64_t i = w * 64; i < std::min(n, w * 64 + 64); ++i) {
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
  for (int64_t i = 0; i < n; ++i) out[i] = (bits[i / 64] >> (i % 64)) & 1 ? dy[i] : T(0);
}

}  // namespace syncgrad::cpu::relu_mask
