// bfloat16 conv2d weight gradient on oneDNN's bfloat16 matmul over chunks of images (bf16_conv_weight_gemm.h).
#include "tensor/cpu/bf16_conv_weight_gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>
#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/onednn_gemm.h"
#include "tensor/cpu/visit.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

// The column matrix of one product stays about this size, in L2 beside the product's other operands: 3 images of
// the CNN's conv2 (K = 800, 196 columns each). Its weight gradient took 2.5-2.8 ms so, 2.8-3.0 with 1 image or 4
// per product, 3.3 with 6 and 4.3-4.6 with 13 or more (syncgrad-bench conv --amp bf16, on AMX).
constexpr int64_t kChunkBytes = int64_t{1} << 20;

// Where this path beat oneDNN's weight-gradient convolution (ms, 1 thread, the Intel Xeon with AMX of
// docs/BENCHMARKS.md, a standalone program timing raw::conv2d_backward_weight both ways; this path / oneDNN's):
// the CNN's conv2 64x32x5x5 on 14x14 (2.3-2.5 / 4.0), 64x64x3x3 on 8x8 (1.1-1.2 / 1.6), 256x256 on 8x8
// (9.6-10.5 / 12.4), as fast with 32 and 128 channels on 16x16; not with 16 output channels (2.5-2.9 / 2.3 on
// 32x32), on 32x32 planes (64x64: 9.6-10.5 / 9.2), or where the float32 sum outgrows L2 (512x512 on 4x4: 33-35 /
// 32).
constexpr int64_t kMinOutputChannels = 32;
constexpr int64_t kMaxOutputPlane = 256;
constexpr int64_t kMaxWeightElements = int64_t{1} << 20;

#if defined(__AVX512BW__)
// The low n bits of a 32-lane mask (none for n <= 0).
uint32_t low_lanes(int64_t n) { return n <= 0 ? 0u : n >= 32 ? ~0u : (1u << n) - 1; }

// The kW column-matrix rows of one input row (kernel row ki, all kernel columns kj), output row oy: out_kj[ox] =
// in[ox + kj - pad] (zero outside the row). Blocks of 32 - (kW - 1) outputs: one masked load of the padded input
// lanes, then per kj a permute (lane l <- lane l + kj) and a masked store.
void im2col_kernel_row(const bfloat16* in, bool inside, bfloat16* out, int64_t ld, const ConvShape& s) {
  const int64_t block = 32 - (s.kw - 1);
  const __m512i lanes = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,
                                         11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const auto in_address = reinterpret_cast<uintptr_t>(in);
  for (int64_t ox = 0; ox < s.ow; ox += block) {
    // Lane t holds input column ox + t - pad, where that is inside [0, W).
    const int64_t first = ox - s.p.padding.w;
    const uint32_t load = inside ? low_lanes(s.w - first) & ~low_lanes(-first) : 0u;
    const __m512i padded =
        _mm512_maskz_loadu_epi16(load, reinterpret_cast<const void*>(in_address + 2 * first));  // masked: no fault
    const auto store = static_cast<__mmask32>(low_lanes(std::min(block, s.ow - ox)));
    for (int64_t kj = 0; kj < s.kw; ++kj) {
      const __m512i shifted = _mm512_permutexvar_epi16(_mm512_add_epi16(lanes, _mm512_set1_epi16(kj)), padded);
      _mm512_mask_storeu_epi16(out + kj * ld + ox, store, shifted);
    }
  }
}
#endif

// Where the output is as wide as the input (stride 1, "same" padding along W), a column-matrix row (c, ki, kj)
// is the input plane read from offset (ki - pad_h) * W + (kj - pad_w) on, with the positions whose input pixel is
// outside the image masked to zero: whole 32-lane copies. The masks per 32 positions: `columns` for each kj,
// `rows` for each ki (position p at output (p / OW, p % OW)).
struct SameWidthMasks {
  int64_t blocks;
  std::vector<uint32_t> columns, rows;  // (kW, blocks), (kH, blocks)
};

SameWidthMasks same_width_masks(const ConvShape& s) {
  const int64_t plane = s.out_plane(), blocks = (plane + 31) / 32;
  SameWidthMasks m{blocks, std::vector<uint32_t>(static_cast<size_t>(s.kw * blocks)),
                   std::vector<uint32_t>(static_cast<size_t>(s.kh * blocks))};
  for (int64_t p = 0; p < plane; ++p) {
    const uint32_t bit = 1u << (p % 32);
    for (int64_t kj = 0; kj < s.kw; ++kj) {
      const int64_t ix = p % s.ow + kj - s.p.padding.w;
      if (ix >= 0 && ix < s.w) m.columns[static_cast<size_t>(kj * blocks + p / 32)] |= bit;
    }
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      const int64_t iy = p / s.ow + ki - s.p.padding.h;
      if (iy >= 0 && iy < s.h) m.rows[static_cast<size_t>(ki * blocks + p / 32)] |= bit;
    }
  }
  return m;
}

#if defined(__AVX512BW__)
void im2col_same_width(const bfloat16* src, bfloat16* col, int64_t ld, const ConvShape& s, const SameWidthMasks& m) {
  const int64_t plane = s.out_plane();
  for (int64_t c = 0; c < s.c_in; ++c) {
    const auto in_address = reinterpret_cast<uintptr_t>(src + c * s.in_plane());
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      for (int64_t kj = 0; kj < s.kw; ++kj) {
        bfloat16* row = col + ((c * s.kh + ki) * s.kw + kj) * ld;
        const int64_t shift = (ki - s.p.padding.h) * s.w + (kj - s.p.padding.w);
        for (int64_t b = 0; b < m.blocks; ++b) {
          const __mmask32 load = m.columns[static_cast<size_t>(kj * m.blocks + b)] &
                                 m.rows[static_cast<size_t>(ki * m.blocks + b)];
          const __m512i v =  // masked: the lanes outside the image are neither read nor faulted on
              _mm512_maskz_loadu_epi16(load, reinterpret_cast<const void*>(in_address + 2 * (32 * b + shift)));
          _mm512_mask_storeu_epi16(row + 32 * b, static_cast<__mmask32>(low_lanes(plane - 32 * b)), v);
        }
      }
    }
  }
}
#endif

// col (K, ld), columns [0, OH * OW) <- the receptive fields of one image src (C_in, H, W); stride 1. Without
// AVX-512 BW (no CPU with AMX lacks it) the shared im2col of conv_im2col.h.
void im2col_unit_stride(const bfloat16* src, bfloat16* col, int64_t ld, const ConvShape& s,
                        [[maybe_unused]] const SameWidthMasks* same_width) {
#if !defined(__AVX512BW__)
  return im2col(src, col, ld, s);
#else
  if (same_width != nullptr) return im2col_same_width(src, col, ld, s, *same_width);
  for (int64_t c = 0; c < s.c_in; ++c) {
    for (int64_t ki = 0; ki < s.kh; ++ki) {
      bfloat16* rows = col + (c * s.kh + ki) * s.kw * ld;
      for (int64_t oy = 0; oy < s.oh; ++oy) {
        const int64_t iy = oy - s.p.padding.h + ki;
        const bool inside = iy >= 0 && iy < s.h;
        im2col_kernel_row(src + (c * s.h + (inside ? iy : 0)) * s.w, inside, rows + oy * s.ow, ld, s);
      }
    }
  }
#endif
}

}  // namespace

bool bf16_conv_weight_gemm_supported(const ConvShape& s) {
  const bool layout = s.p.stride == Size2(1) && s.p.dilation == Size2(1) && s.groups == 1 && s.c_in > 1 && s.kw <= 16;
  return layout && s.c_out >= kMinOutputChannels && s.out_plane() <= kMaxOutputPlane &&
         s.col_rows() * s.c_out <= kMaxWeightElements;
}

bool bf16_conv_weight_gemm(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                           const ConvShape& s) {
  const int64_t k = s.col_rows(), plane = s.out_plane();
  // A whole number of images per thread where the chunk holds several.
  const int64_t threads = get_num_threads();
  int64_t images = std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(1, 2 * k * plane), 1, s.batch);
  if (images > threads) images -= images % threads;
  bfloat16* col = scratch<bfloat16, 0>(k * images * plane);
  bfloat16* gy_chunk = scratch<bfloat16, 1>(s.c_out * images * plane);
  float* sums = scratch<float, 2>(k * s.c_out);  // dW^T (K, C_out)
  const auto* x = static_cast<const bfloat16*>(input.data_ptr());
  const auto* gy = static_cast<const bfloat16*>(grad_out.data_ptr());
  std::optional<SameWidthMasks> same_width;
  if (s.ow == s.w) same_width = same_width_masks(s);
  for (int64_t first = 0; first < s.batch; first += images) {
    const int64_t count = std::min(images, s.batch - first), j = count * plane;
    parallel_for(count, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        im2col_unit_stride(x + (first + i) * s.c_in * s.in_plane(), col + i * plane, j, s,
                           same_width ? &*same_width : nullptr);
        for (int64_t o = 0; o < s.c_out; ++o) {
          std::memcpy(gy_chunk + o * j + i * plane, gy + ((first + i) * s.c_out + o) * plane,
                      static_cast<size_t>(plane) * sizeof(bfloat16));
        }
      }
    });
    // dW^T (K, C_out) (+)= col (K, j) @ gy_chunk^T (j, C_out), gy_chunk being (C_out, j).
    if (!onednn_gemm_bf16_f32(k, s.c_out, j, {col, j, 1}, {gy_chunk, 1, j}, sums, s.c_out, first > 0)) return false;
  }
  auto* gw = static_cast<bfloat16*>(grad_weight.data_ptr());
  for (int64_t o = 0; o < s.c_out; ++o) {
    for (int64_t r = 0; r < k; ++r) gw[o * k + r] = to_bf16(sums[r * s.c_out + o]);
  }
  return true;
}

}  // namespace syncgrad::cpu
