// Where the tiles of the Winograd conv kernels (tensor/cpu/winograd.cpp) lie in memory, and how 16 of them are
// read and written at once: one vector lane per tile, so that the transforms (winograd_transforms.h) are a
// handful of vector adds. A tile is an m x m block of the output (2x2 or 4x4 for 3x3 kernels, 4x4 for 5x5) and
// the patch of the zero-bordered input it depends on (4x4, 6x6 or 8x8). Where a vector's 2x2 tiles are runs of
// 16, 8 or 4 tiles side by side (images 32 pixels wide or a multiple, 16 or 8 wide), or its 4x4 tiles runs of 4
// (images a multiple of 16 pixels wide), they are read and written with whole-vector loads, stores and shuffles;
// otherwise tile by tile, with the Width x Width blocks of Width vectors transposed in registers (gather_rows(),
// scatter_rows()).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/transpose_tiles.h"

// AVX2 without AVX-512: the 4x4 tiles are read and written half a vector at a time, in 256-bit registers
// (take_half_row_runs_of_4 and the functions after it), not through the 16-lane shuffles g++ lowers through the
// stack there.
#if defined(__AVX2__) && !defined(__AVX512F__)
#define SYNCGRAD_WINOGRAD_AVX2 1
#include <immintrin.h>
#endif

namespace syncgrad::cpu::winograd {

using V = conv_gemm::Vec<float>;
typedef float H __attribute__((vector_size(32)));  // half a vector: 8 pixels, or one pixel of 8 tiles
inline constexpr int64_t kLanes = conv_gemm::kLanes<float>;  // tiles per vector
static_assert(kLanes == 16, "the Winograd kernels assume 16-float vectors");

// The rows and columns of a tile's output block inside the image (fewer than m for tiles on the last row or
// column of an image whose size m does not divide).
struct Extent {
  uint8_t rows, cols;
};

// N floats in a vector register.
template <int N>
struct PieceOf {
  typedef float type __attribute__((vector_size(N * sizeof(float))));
};
template <int N>
using Piece = typename PieceOf<N>::type;

// Floats per tile row read or written at once for rows of Size pixels: a power of two, 2 to 8.
template <int Size>
inline constexpr int kWidth = Size <= 2 ? 2 : Size <= 4 ? 4 : 8;

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
// and shuffles that touch no pixel beyond the run's 2 * Segment + Shift: take() returns pixel Shift (0..3) of
// every tile, lane l = base[offset(l) + Shift]. With Segment = 0 each tile is read on its own (gather_rows()).
template <int Segment, int Shift>
[[gnu::always_inline]] inline V take(const float* base, const int32_t* offset) {
  constexpr int odd = Shift % 2, even = Shift - odd;
  static_assert(Segment == 16 || Segment == 8 || Segment == 4, "tiles anywhere are read by gather_rows()");
  if constexpr (Segment == 16) {
    const float* p = base + offset[0] + even;
    return deinterleave<odd>(conv_gemm::load<float>(p), conv_gemm::load<float>(p + kLanes));
  } else if constexpr (Segment == 8) {
    return deinterleave<odd>(conv_gemm::load<float>(base + offset[0] + even),
                             conv_gemm::load<float>(base + offset[8] + even));
  } else {
    H run[4];  // the 8 pixels of each run from `even`
    for (int q = 0; q < 4; ++q) std::memcpy(&run[q], base + offset[4 * q] + even, sizeof(H));
    const H lo = __builtin_shufflevector(run[0], run[1], odd, 2 + odd, 4 + odd, 6 + odd, 8 + odd, 10 + odd, 12 + odd,
                                         14 + odd);
    const H hi = __builtin_shufflevector(run[2], run[3], odd, 2 + odd, 4 + odd, 6 + odd, 8 + odd, 10 + odd, 12 + odd,
                                         14 + odd);
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
}

// N floats: Width at row + offset[tile] for each of the tiles first, first + stride, ... (N / Width of them).
template <int N, int Width>
[[gnu::always_inline]] inline Piece<N> pack(const float* row, const int32_t* offset, int first, int stride) {
  if constexpr (N == Width) {
    Piece<N> p;
    std::memcpy(&p, row + offset[first], sizeof p);
    return p;
  } else {
    const Piece<N / 2> lo = pack<N / 2, Width>(row, offset, first, stride);
    const Piece<N / 2> hi = pack<N / 2, Width>(row, offset, first + N / 2 / Width * stride, stride);
    return [&]<size_t... I>(std::index_sequence<I...>) -> Piece<N> {
      return __builtin_shufflevector(lo, hi, static_cast<int>(I)...);
    }(std::make_index_sequence<N>());
  }
}

// Transposes the Width x Width blocks of z[0, Width) (lanes [q Width, (q + 1) Width) of each vector form block
// q): one two-input shuffle per index bit and vector pair. Its own inverse.
template <int Width>
[[gnu::always_inline]] inline void transpose_blocks(V* z) {
  [&]<int... Bit>(std::integer_sequence<int, Bit...>) {
    auto swap_bit = [&]<int B>() {
#pragma GCC unroll 8
      for (int i = 0; i < Width; ++i) {
        if ((i >> B & 1) == 0) swap_index_bit<B>(z[i], z[i | 1 << B], std::make_index_sequence<kLanes>());
      }
    };
    (swap_bit.template operator()<Bit>(), ...);
  }(std::make_integer_sequence<int, std::countr_zero(static_cast<unsigned>(Width))>());
}

#if defined(SYNCGRAD_WINOGRAD_AVX2)
// AVX2-only CPUs: g++ lowers the 16-lane shuffles of the functions above through the stack element by element,
// and keeps 16-float vector variables in memory (the input transform took 21% of a ResNet-20 step on a Zen 3
// EPYC), so there the 4x4-tile kernels (winograd.cpp) run on each half vector of 8 tiles in 256-bit registers
// (H), read and written by the functions below.

// In-lane 4 x 4 transposes of r[0, 4): columns[b] lane 4q + t = r[t] lane 4q + b (q = 0, 1: the 128-bit lanes).
[[gnu::always_inline]] inline void transpose_4x4_lanes(const __m256* r, H* columns) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpacklo_ps(r[2], r[3]);
  const __m256 t2 = _mm256_unpackhi_ps(r[0], r[1]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  columns[0] = _mm256_shuffle_ps(t0, t1, 0x44);
  columns[1] = _mm256_shuffle_ps(t0, t1, 0xEE);
  columns[2] = _mm256_shuffle_ps(t2, t3, 0x44);
  columns[3] = _mm256_shuffle_ps(t2, t3, 0xEE);
}

// take_runs_of_4 for all Size (6 or 8) pixels of a patch row of the 8 tiles of two runs of 4 at offset[0] and
// offset[4]: out[j] lane l = base[offset(l) + j]. Pixel 4a + b of tile t of a run is float 4 (a + t) + b from
// its start: column b of the 4 x 4 block of the run's floats [4a, 4a + 16). The two runs share a 256-bit
// register (one per 128-bit lane), and the in-lane transposes of blocks 0 and 1 give pixels 0-3 and 4-7;
// floats [0, 20) of each run are read, within what take_runs_of_4 reads.
template <int Size>
[[gnu::always_inline]] inline void take_half_row_runs_of_4(const float* base, const int32_t* offset, H* out) {
  static_assert(Size > 4 && Size <= 8, "two 4 x 4 blocks hold pixels 0-7");
  const float* first = base + offset[0];
  const float* second = base + offset[4];
  __m256 r[5];
  for (int k = 0; k < 5; ++k) {
    r[k] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(first + 4 * k)), _mm_loadu_ps(second + 4 * k), 1);
  }
  H columns[8];
  transpose_4x4_lanes(r, columns);
  transpose_4x4_lanes(r + 1, columns + 4);
  for (int j = 0; j < Size; ++j) out[j] = columns[j];
}

// gather_rows for 8 tiles anywhere and Size 6 or 8: 8 floats of each tile's row (up to 2 past a 6-pixel
// patch), transposed as one 8 x 8 block.
template <int Size>
[[gnu::always_inline]] inline void gather_half_rows(const float* row, const int32_t* offset, H* out) {
  static_assert(Size > 4 && Size <= 8, "rows of 8 floats");
  H z[8];
  for (int i = 0; i < 8; ++i) std::memcpy(&z[i], row + offset[i], sizeof(H));
  transpose_block<float>(z);
  for (int j = 0; j < Size; ++j) out[j] = z[j];
}

// load_row for 8 4x4 tiles (the overload below for 16): patch row `row` pixels 0..Size-1, in runs of 4
// (Segment 4) or anywhere (0).
template <int Segment, int Size>
[[gnu::always_inline]] inline void load_row(const float* row, const int32_t* offset, H* out) {
  if constexpr (Segment == 4) {
    take_half_row_runs_of_4<Size>(row, offset, out);
  } else {
    static_assert(Segment == 0, "4x4 tiles come in runs of 4 or anywhere");
    gather_half_rows<Size>(row, offset, out);
  }
}

// put_runs_of_4 for 8 tiles (runs at offset[0] and offset[4]): run q's 16 floats are the 4 x 4 transpose of
// lanes 4q..4q+3 of y[0..3] (float 4t + b = pixel b of tile t); both runs at once, one per 128-bit lane.
[[gnu::always_inline]] inline void put_half_runs_of_4(float* row, const int32_t* offset, const H* y) {
  H tiles[4];  // tiles[t]: tile t of the first run (low lane) and of the second (high lane)
  transpose_4x4_lanes(y, tiles);
  float* first = row + offset[0];
  float* second = row + offset[4];
  _mm256_storeu_ps(first, _mm256_permute2f128_ps(tiles[0], tiles[1], 0x20));
  _mm256_storeu_ps(first + 8, _mm256_permute2f128_ps(tiles[2], tiles[3], 0x20));
  _mm256_storeu_ps(second, _mm256_permute2f128_ps(tiles[0], tiles[1], 0x31));
  _mm256_storeu_ps(second + 8, _mm256_permute2f128_ps(tiles[2], tiles[3], 0x31));
}

// scatter_rows for 8 tiles anywhere and 4 pixels: row[offset[l] + j] = in[j] lane l for j < the columns of
// tile l, for those of the first `lanes` tiles that have a row a.
[[gnu::always_inline]] inline void scatter_half_rows(float* row, const int32_t* offset, const Extent* extent,
                                                     const H* in, int lanes, int a) {
  H tiles[4];  // tiles[t]: tile t (low lane) and tile 4 + t (high lane)
  transpose_4x4_lanes(in, tiles);
  for (int tile = 0; tile < std::min(lanes, 8); ++tile) {
    if (extent[tile].rows <= a) continue;
    const __m128 piece = tile < 4 ? _mm256_castps256_ps128(tiles[tile]) : _mm256_extractf128_ps(tiles[tile - 4], 1);
    if (extent[tile].cols == 4) {
      _mm_storeu_ps(row + offset[tile], piece);
    } else {
      float pixels[4];
      _mm_storeu_ps(pixels, piece);
      for (int j = 0; j < extent[tile].cols; ++j) row[offset[tile] + j] = pixels[j];
    }
  }
}

// store_blocks for the 4x4 blocks of 8 tiles (the overload below for 16): y[a * 4 + b] is pixel (a, b).
template <int Segment, int M>
[[gnu::always_inline]] inline void store_blocks(float* base, int64_t stride, const int32_t* offset,
                                                const Extent* extent, const H* y, int lanes) {
  static_assert(M == 4, "half vectors hold 4x4 tiles");
#pragma GCC unroll 4
  for (int a = 0; a < 4; ++a) {
    if constexpr (Segment == 4) {
      put_half_runs_of_4(base + a * stride, offset, y + a * 4);
    } else {
      static_assert(Segment == 0, "4x4 tiles come in runs of 4 or anywhere");
      scatter_half_rows(base + a * stride, offset, extent, y + a * 4, lanes, a);
    }
  }
}
#endif

// out[j] lane l = row[offset[l] + j] for j < Size (pixels 0..Size-1 of one row of 16 tiles anywhere). Each tile's
// row is read as Width = kWidth<Size> consecutive floats (so up to Width - Size pixels past the tile are read),
// 16 / Width tiles to a vector (vector i holds tiles i, i + Width, ...), and transposed by blocks.
template <int Size>
[[gnu::always_inline]] inline void gather_rows(const float* row, const int32_t* offset, V* out) {
  constexpr int width = kWidth<Size>;
  V z[width];
#pragma GCC unroll 8
  for (int i = 0; i < width; ++i) z[i] = pack<kLanes, width>(row, offset, i, width);
  transpose_blocks<width>(z);
#pragma GCC unroll 8
  for (int j = 0; j < Size; ++j) out[j] = z[j];
}

// The inverse of gather_rows for Size = Width = 2 or 4, for row `a` of the tiles' blocks: row[offset[l] + j] =
// in[j] lane l for j < the columns of tile l, for those of the first `lanes` tiles that have a row a.
template <int Size>
[[gnu::always_inline]] inline void scatter_rows(float* row, const int32_t* offset, const Extent* extent, const V* in,
                                                int lanes, int a) {
  static_assert(Size == kWidth<Size>, "whole rows of 2 or 4 pixels");
  V z[Size];
#pragma GCC unroll 4
  for (int j = 0; j < Size; ++j) z[j] = in[j];
  transpose_blocks<Size>(z);  // z[i], block q: the row of tile q * Size + i
  [&]<int... Lane>(std::integer_sequence<int, Lane...>) {
    auto put = [&]<int Q>(int i) {
      const int tile = Q * Size + i;
      if (tile >= lanes || extent[tile].rows <= a) return;
      const Piece<Size> piece = __builtin_shufflevector(z[i], z[i], (Q * Size + Lane)...);
      if (extent[tile].cols == Size) {
        std::memcpy(row + offset[tile], &piece, sizeof piece);
      } else {
        for (int j = 0; j < extent[tile].cols; ++j) row[offset[tile] + j] = piece[j];
      }
    };
#pragma GCC unroll 4
    for (int i = 0; i < Size; ++i) {
      [&]<int... Q>(std::integer_sequence<int, Q...>) {
        (put.template operator()<Q>(i), ...);
      }(std::make_integer_sequence<int, kLanes / Size>());
    }
  }(std::make_integer_sequence<int, Size>());
}

// base[offset(tile) + 0] = left[tile], base[offset(tile) + 1] = right[tile] for the 16 tiles of a vector of runs
// of Segment tiles side by side.
template <int Segment>
[[gnu::always_inline]] inline void put_pairs(float* base, const int32_t* offset, const V& left, const V& right) {
  const V first = interleave<0>(left, right), second = interleave<1>(left, right);  // tiles 0-7, 8-15
  if constexpr (Segment == 16) {
    conv_gemm::store<float>(base + offset[0], first);
    conv_gemm::store<float>(base + offset[0] + kLanes, second);
  } else if constexpr (Segment == 8) {
    conv_gemm::store<float>(base + offset[0], first);
    conv_gemm::store<float>(base + offset[8], second);
  } else {
    static_assert(Segment == 4, "tiles anywhere are written by scatter_rows()");
    const H quarters[4] = {__builtin_shufflevector(first, first, 0, 1, 2, 3, 4, 5, 6, 7),
                           __builtin_shufflevector(first, first, 8, 9, 10, 11, 12, 13, 14, 15),
                           __builtin_shufflevector(second, second, 0, 1, 2, 3, 4, 5, 6, 7),
                           __builtin_shufflevector(second, second, 8, 9, 10, 11, 12, 13, 14, 15)};
    for (int q = 0; q < 4; ++q) std::memcpy(base + offset[4 * q], &quarters[q], sizeof(H));
  }
}

// Pixel Shift of the patch rows (6 or 8 pixels) of 16 4x4 tiles in runs of 4 side by side (tiles 4q..4q+3 of a
// vector, run q starting at offset[4q]): lane l = base[offset(l) + Shift]. The 16 floats of run q from its pixel
// Shift hold that pixel of its tiles at 0, 4, 8, 12 (the run's patches end at 4 * 3 + Size and the read at
// Shift + 16 <= Size + 15, so up to 3 floats past them are read and dropped).
template <int Shift>
[[gnu::always_inline]] inline V take_runs_of_4(const float* base, const int32_t* offset) {
  H half[2];
  for (int h = 0; h < 2; ++h) {
    const V first = conv_gemm::load<float>(base + offset[8 * h] + Shift);
    const V second = conv_gemm::load<float>(base + offset[8 * h + 4] + Shift);
    half[h] = __builtin_shufflevector(first, second, 0, 4, 8, 12, 16, 20, 24, 28);
  }
  return __builtin_shufflevector(half[0], half[1], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// out[j] lane l = row[offset[l] + j] for j < Size: pixels 0..Size-1 of one row of the patches (Size 4, 6 or 8) of
// 16 tiles: tiles anywhere (Segment 0), runs of 2x2 tiles (Size 4) or runs of 4 4x4 tiles (Size 6, 8).
template <int Segment, int Size>
[[gnu::always_inline]] inline void load_row(const float* row, const int32_t* offset, V* out) {
  if constexpr (Segment == 0) {
    gather_rows<Size>(row, offset, out);
  } else if constexpr (Size == 4) {
    [&]<int... Shift>(std::integer_sequence<int, Shift...>) {
      ((out[Shift] = take<Segment, Shift>(row, offset)), ...);
    }(std::make_integer_sequence<int, Size>());
  } else {
    static_assert(Segment == 4, "4x4 tiles side by side come in runs of 4");
    [&]<int... Shift>(std::integer_sequence<int, Shift...>) {
      ((out[Shift] = take_runs_of_4<Shift>(row, offset)), ...);
    }(std::make_integer_sequence<int, Size>());
  }
}

// Row a of the 4x4 blocks of 16 whole tiles in runs of 4 side by side: y[b] lane l is pixel (a, b) of tile l; run
// q's row is 16 consecutive floats at row + offset[4q] (its tiles' pixels interleaved: b + 4 * tile).
[[gnu::always_inline]] inline void put_runs_of_4(float* row, const int32_t* offset, const V* y) {
  const V pairs01[2] = {interleave<0>(y[0], y[1]), interleave<1>(y[0], y[1])};  // tiles 0-7, 8-15: (b0, b1)
  const V pairs23[2] = {interleave<0>(y[2], y[3]), interleave<1>(y[2], y[3])};  // (b2, b3)
  for (int h = 0; h < 2; ++h) {
    conv_gemm::store<float>(row + offset[8 * h], __builtin_shufflevector(pairs01[h], pairs23[h], 0, 1, 16, 17, 2, 3, 18,
                                                                         19, 4, 5, 20, 21, 6, 7, 22, 23));
    conv_gemm::store<float>(row + offset[8 * h + 4], __builtin_shufflevector(pairs01[h], pairs23[h], 8, 9, 24, 25, 10,
                                                                             11, 26, 27, 12, 13, 28, 29, 14, 15, 30,
                                                                             31));
  }
}

// Writes y[a * M + b] to pixel (a, b) of the M x M blocks of the first `lanes` tiles, rows `stride` apart, within
// each tile's extent. Segmented vectors (runs of 2x2 tiles, or of 4 4x4 tiles) are whole: 16 tiles inside the
// image.
template <int Segment, int M>
[[gnu::always_inline]] inline void store_blocks(float* base, int64_t stride, const int32_t* offset,
                                                const Extent* extent, const V* y, int lanes) {
  if constexpr (Segment == 0) {
#pragma GCC unroll 4
    for (int a = 0; a < M; ++a) scatter_rows<M>(base + a * stride, offset, extent, y + a * M, lanes, a);
  } else if constexpr (M == 2) {
    for (int a = 0; a < 2; ++a) put_pairs<Segment>(base + a * stride, offset, y[a * 2], y[a * 2 + 1]);
  } else {
    static_assert(M == 4 && Segment == 4, "4x4 tiles side by side come in runs of 4");
#pragma GCC unroll 4
    for (int a = 0; a < 4; ++a) put_runs_of_4(base + a * stride, offset, y + a * 4);
  }
}

// The registers the transforms of M x M output tiles run on, and so the tiles (or channels) taken at once: half
// vectors of 8 (H) for 4x4 tiles on AVX2 without AVX-512 (see above), else whole vectors of 16 (V). load_row and
// store_blocks have an overload for each.
#if defined(SYNCGRAD_WINOGRAD_AVX2)
template <int M>
using TileVector = std::conditional_t<M == 4, H, V>;
#else
template <int M>
using TileVector = V;
#endif
template <int M>
inline constexpr int64_t kTileLanes = sizeof(TileVector<M>) / sizeof(float);

}  // namespace syncgrad::cpu::winograd
