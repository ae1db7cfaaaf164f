// Branch-free bfloat16 <-> float conversions that compilers vectorise (Eigen's scalar conversion branches on
// NaN, which keeps loops scalar): float -> bfloat16 rounds to nearest even and turns NaN into the quiet NaN
// 0x7fc0 / 0xffc0, bit-identical to Eigen::bfloat16(float). Used by the CPU kernels' bfloat16 fast paths.
#pragma once

#include <Eigen/Core>
#include <bit>
#include <cstdint>
#include <cstring>

namespace syncgrad::cpu {

inline float bf16_bits_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

inline uint16_t float_to_bf16_bits(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float to_float(Eigen::bfloat16 v) { return bf16_bits_to_float(Eigen::numext::bit_cast<uint16_t>(v)); }

inline Eigen::bfloat16 to_bf16(float v) { return Eigen::numext::bit_cast<Eigen::bfloat16>(float_to_bf16_bits(v)); }

// dst[i] = float(src[i]) for n elements (exact).
inline void bf16_to_float(const Eigen::bfloat16* __restrict src, float* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_float(src[i]);
}

// dst[i] = bfloat16(src[i]) for n elements.
inline void float_to_bf16(const float* __restrict src, Eigen::bfloat16* __restrict dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

}  // namespace syncgrad::cpu
