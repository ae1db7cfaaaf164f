// bfloat16 conv2d kernels for stride 1 without dilation on AVX512_BF16 dot products (bf16_tile.h), float32
// accumulation: the implicit GEMMs of conv_implicit.h with K consumed in pairs.
//   forward:      out^T (OH*OW, cop) = fields of x (OH*OW, K) * W^T (K, cop) + bias, per output row; the
//                 pairs are pairs of input channels: each image's group planes are copied once into a zero
//                 border with channels 2c and 2c + 1 interleaved, so a receptive field's pair is one 32-bit
//                 word; W^T is packed in the same pairs. With one or three input channels, pairs of
//                 neighbouring taps (kj, kj + 1) of a kernel row make fewer pairs: read in place from a plain
//                 bordered copy, an odd kW padded with a zero-weight tap over an extra zero column
//   grad input:   gx^T (H*W, cip) = fields of grad_out (bordered by kernel - 1 - padding, output channels
//                 interleaved in pairs) * flipped W packed in pairs, per input row (a full correlation)
//   grad weight:  dW^T (K, cop) += fields of x^T (K, J) * grad_out^T (J, cop) over chunks of images: the
//                 pairs are pairs of neighbouring output positions (ox, ox + 1) of one output row (an odd
//                 OW gets a zero position), so x is read in place from a plain zero-bordered copy and only
//                 grad_out^T is packed
// K = C_in_g * kH * kW, cop / cip = C_out_g / C_in_g rounded up to whole vectors (zero padding). Results go
// through float32 scratch and are rounded to bfloat16 once, transposed into NCHW.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/bf16_pack.h"
#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/transpose_tiles.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#include "tensor/cpu/bf16_tile.h"

namespace syncgrad::cpu::bf16 {
namespace {

int64_t vectors_of(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

const uint16_t* bits(const Tensor& t) { return static_cast<const uint16_t*>(t.data_ptr()); }
uint16_t* mutable_bits(const Tensor& t) { return static_cast<uint16_t*>(t.data_ptr()); }

// Geometry of a zero-bordered stack of planes (planes, h + 2 * pad_h, w + 2 * pad_w + extra_w).
struct Border {
  int64_t planes, h, w, pad_h, pad_w, extra_w = 0;
  int64_t width() const { return w + 2 * pad_w + extra_w; }
  int64_t plane() const { return (h + 2 * pad_h) * width(); }
  int64_t size() const { return planes * plane(); }
};

// dst: (ceil(channels / 2) planes of 32-bit words with `b`'s geometry) <- src (channels, h, w): word (y, x) of
// plane q holds channel 2q in its first and channel 2q + 1 (zero past the last channel) in its second half.
void copy_bordered_pairs(const uint16_t* src, int64_t channels, const Border& b, uint16_t* dst) {
  std::fill(dst, dst + 2 * b.size(), uint16_t{0});
  for (int64_t q = 0; q < b.planes; ++q) {
    const bool has_odd = 2 * q + 1 < channels;
    for (int64_t y = 0; y < b.h; ++y) {
      const uint16_t* even_row = src + (2 * q * b.h + y) * b.w;
      const uint16_t* odd_row = even_row + b.h * b.w;
      uint16_t* out = dst + 2 * (q * b.plane() + (y + b.pad_h) * b.width() + b.pad_w);
      if (has_odd) {
        for (int64_t x = 0; x < b.w; ++x) {
          out[2 * x] = even_row[x];
          out[2 * x + 1] = odd_row[x];
        }
      } else {
        for (int64_t x = 0; x < b.w; ++x) out[2 * x] = even_row[x];
      }
    }
  }
}

// dst (planes, bordered) <- src (planes, h, w) in a zero border (bfloat16 elements, not pairs).
void copy_bordered_plain(const uint16_t* src, const Border& b, uint16_t* dst) {
  std::fill(dst, dst + b.size(), uint16_t{0});
  for (int64_t c = 0; c < b.planes; ++c) {
    for (int64_t y = 0; y < b.h; ++y) {
      std::memcpy(dst + c * b.plane() + (y + b.pad_h) * b.width() + b.pad_w, src + (c * b.h + y) * b.w,
                  static_cast<size_t>(b.w) * sizeof(uint16_t));
    }
  }
}

// Offsets (bfloat16 elements) of the kernel taps (q, ki, kj), in that order, in a stack of paired planes.
std::vector<int64_t> pair_tap_offsets(const Border& b, int64_t kh, int64_t kw) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(b.planes * kh * kw));
  for (int64_t q = 0; q < b.planes; ++q) {
    for (int64_t ki = 0; ki < kh; ++ki) {
      for (int64_t kj = 0; kj < kw; ++kj) offsets.push_back(2 * (q * b.plane() + ki * b.width() + kj));
    }
  }
  return offsets;
}

// Offsets (bfloat16 elements) of the tap pairs (c, ki, kj = 2q) in a stack of plain planes.
std::vector<int64_t> row_pair_offsets(const Border& b, int64_t kh, int64_t kw) {
  std::vector<int64_t> offsets;
  for (int64_t c = 0; c < b.planes; ++c) {
    for (int64_t ki = 0; ki < kh; ++ki) {
      for (int64_t kj = 0; kj < kw; kj += 2) offsets.push_back(c * b.plane() + ki * b.width() + kj);
    }
  }
  return offsets;
}

// dst (rows, p) bfloat16 <- src (p, ld) float32 transposed (columns [0, rows)); `tmp` holds rows * p floats.
void store_transposed(const float* src, int64_t p, int64_t rows, int64_t ld, float* tmp, uint16_t* dst) {
  transpose<float>(src, p, rows, ld, tmp, p);
  float_to_bf16(tmp, reinterpret_cast<Eigen::bfloat16*>(dst), rows * p);
}

}  // namespace

void conv_forward(const Tensor& out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const ConvShape& s) {
  const int64_t cig = s.c_in_group(), cog = s.c_out_group(), taps = s.kh * s.kw, p = s.out_plane();
  const int64_t cop = vectors_of(cog), row_pairs = (s.kw + 1) / 2;
  const bool tap_pairs = cig * s.kh * row_pairs < (cig + 1) / 2 * taps;
  const Border in = tap_pairs ? Border{cig, s.h, s.w, s.p.padding.h, s.p.padding.w, s.kw % 2}
                              : Border{(cig + 1) / 2, s.h, s.w, s.p.padding.h, s.p.padding.w};
  const std::vector<int64_t> offsets =
      tap_pairs ? row_pair_offsets(in, s.kh, s.kw) : pair_tap_offsets(in, s.kh, s.kw);
  const int64_t kp = static_cast<int64_t>(offsets.size());
  // Per group: W^T in the same pairs (kp, cop, 2); column co of channel pair (q, ki, kj) holds w[co][2q][ki][kj],
  // w[co][2q + 1][ki][kj], of tap pair (c, ki, q) w[co][c][ki][2q], w[co][c][ki][2q + 1].
  std::vector<uint16_t> packed(static_cast<size_t>(s.groups * kp * 2 * cop), 0);
  std::vector<float> col_bias(static_cast<size_t>(s.groups * cop), 0.0f);
  const uint16_t* w = bits(weight);
  for (int64_t g = 0; g < s.groups; ++g) {
    for (int64_t co = 0; co < cog; ++co) {
      const uint16_t* wc = w + (g * cog + co) * cig * taps;
      for (int64_t c = 0; c < cig; ++c) {
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t ki = t / s.kw, kj = t % s.kw;
          const int64_t pair = tap_pairs ? (c * s.kh + ki) * row_pairs + kj / 2 : (c / 2) * taps + t;
          const int64_t half = tap_pairs ? kj % 2 : c % 2;
          packed[static_cast<size_t>(((g * kp + pair) * cop + co) * 2 + half)] = wc[c * taps + t];
        }
      }
      if (bias.defined()) col_bias[g * cop + co] = bf16_bits_to_float(bits(bias)[g * cog + co]);
    }
  }
  const uint16_t* x = bits(input);
  uint16_t* y = mutable_bits(out);
  for_images(s.batch, [&](int64_t first, int64_t last) {
    uint16_t* bordered = scratch<uint16_t, 20>((tap_pairs ? 1 : 2) * in.size());
    float* y_t = scratch<float, 21>(p * cop);  // (OH * OW, cop)
    float* staged = scratch<float, 22>(cog * p);
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const uint16_t* x_g = x + (n * s.c_in + g * cig) * s.in_plane();
        const uint16_t* w_g = packed.data() + g * kp * 2 * cop;
        const Epilogue bias_g{.col_bias = col_bias.data() + g * cop};
        if (tap_pairs) {
          copy_bordered_plain(x_g, in, bordered);
          for (int64_t oy = 0; oy < s.oh; ++oy) {
            gemm<14, 2>(s.ow, cop, kp, PairTable<1>{bordered + oy * in.width(), offsets.data()}, w_g, 2 * cop,
                        y_t + oy * s.ow * cop, cop, bias_g);
          }
        } else {
          copy_bordered_pairs(x_g, cig, in, bordered);
          for (int64_t oy = 0; oy < s.oh; ++oy) {
            gemm<14, 2>(s.ow, cop, kp, PairTable<2>{bordered + 2 * oy * in.width(), offsets.data()}, w_g, 2 * cop,
                        y_t + oy * s.ow * cop, cop, bias_g);
          }
        }
        store_transposed(y_t, p, cog, cop, staged, y + (n * s.c_out + g * cog) * p);
      }
    }
  });
}

void conv_backward_input(const Tensor& grad_input, const Tensor& grad_out, const Tensor& weight,
                         const ConvShape& s) {
  const int64_t cig = s.c_in_group(), cog = s.c_out_group(), taps = s.kh * s.kw;
  const int64_t cip = vectors_of(cig);
  const Border out{(cog + 1) / 2, s.oh, s.ow, s.kh - 1 - s.p.padding.h, s.kw - 1 - s.p.padding.w};
  const int64_t kp = out.planes * taps;
  const std::vector<int64_t> offsets = pair_tap_offsets(out, s.kh, s.kw);
  // Per group: flipped W in pairs (kp, cip, 2): pair (q, a, b) of column c =
  // w[2q][c][kh - 1 - a][kw - 1 - b], w[2q + 1][c][kh - 1 - a][kw - 1 - b].
  std::vector<uint16_t> flipped(static_cast<size_t>(s.groups * kp * 2 * cip), 0);
  const uint16_t* w = bits(weight);
  for (int64_t g = 0; g < s.groups; ++g) {
    for (int64_t m = 0; m < cog; ++m) {
      for (int64_t c = 0; c < cig; ++c) {
        const uint16_t* wmc = w + ((g * cog + m) * cig + c) * taps;
        for (int64_t t = 0; t < taps; ++t) {
          flipped[static_cast<size_t>(((g * kp + (m / 2) * taps + t) * cip + c) * 2 + m % 2)] = wmc[taps - 1 - t];
        }
      }
    }
  }
  const uint16_t* gy = bits(grad_out);
  uint16_t* gx = mutable_bits(grad_input);
  for_images(s.batch, [&](int64_t first, int64_t last) {
    uint16_t* bordered = scratch<uint16_t, 20>(2 * out.size());
    float* gx_t = scratch<float, 21>(s.in_plane() * cip);  // (H * W, cip)
    float* staged = scratch<float, 22>(cig * s.in_plane());
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        copy_bordered_pairs(gy + (n * s.c_out + g * cog) * s.out_plane(), cog, out, bordered);
        const uint16_t* w_g = flipped.data() + g * kp * 2 * cip;
        for (int64_t iy = 0; iy < s.h; ++iy) {
          gemm<14, 2>(s.w, cip, kp, PairTable<2>{bordered + 2 * iy * out.width(), offsets.data()}, w_g, 2 * cip,
                      gx_t + iy * s.w * cip, cip);
        }
        store_transposed(gx_t, s.in_plane(), cig, cip, staged, gx + (n * s.c_in + g * cig) * s.in_plane());
      }
    }
  });
}

void conv_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& input,
                          const ConvShape& s) {
  const int64_t cig = s.c_in_group(), cog = s.c_out_group(), k = s.col_rows(), p = s.out_plane();
  const int64_t cop = vectors_of(cog);
  const int64_t row_pairs = (s.ow + 1) / 2, image_pairs = s.oh * row_pairs;
  // An odd OW pairs its last position with a zero column of the bordered copy (and a zero gradient).
  const Border in{cig, s.h, s.w, s.p.padding.h, s.p.padding.w, s.ow % 2};
  // Images per chunk: grad_out^T in pairs within ~256 KiB (at least one, at most 16).
  const int64_t chunk = std::clamp<int64_t>((int64_t{256} << 10) / (image_pairs * cop * 4), 1, 16);
  // Pair j of a chunk = (image i, oy, pair q) -> the offset of its first position in the chunk's bordered stack.
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(chunk * image_pairs));
  for (int64_t i = 0; i < chunk; ++i) {
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      for (int64_t q = 0; q < row_pairs; ++q) positions.push_back(i * in.size() + oy * in.width() + 2 * q);
    }
  }
  std::vector<float> total(static_cast<size_t>(s.c_out * k), 0.0f);  // (C_out, K)
  std::mutex merge;
  const uint16_t* gy = bits(grad_out);
  const uint16_t* x = bits(input);
  const bool word_aligned = reinterpret_cast<uintptr_t>(gy) % 4 == 0 && s.ow % 2 == 0;
  for_images(s.batch, [&](int64_t first, int64_t last) {
    if (first == last) return;
    uint16_t* bordered = scratch<uint16_t, 20>(chunk * in.size());
    uint16_t* gy_pairs = scratch<uint16_t, 23>(chunk * image_pairs * 2 * cop);  // (J pairs, cop, 2)
    float* dw_t = scratch<float, 21>(s.groups * k * cop);                       // per group (K, cop)
    for (int64_t n0 = first; n0 < last; n0 += chunk) {
      const int64_t images = std::min(chunk, last - n0);
      for (int64_t g = 0; g < s.groups; ++g) {
        for (int64_t i = 0; i < images; ++i) {
          const int64_t n = n0 + i;
          copy_bordered_plain(x + (n * s.c_in + g * cig) * s.in_plane(), in, bordered + i * in.size());
          const uint16_t* gy_n = gy + (n * s.c_out + g * cog) * p;
          uint16_t* dst = gy_pairs + i * image_pairs * 2 * cop;
          if (word_aligned) {
            pack_pairs(gy_n, 1, p, p, cog, dst, cop);  // grad_out (cog, p) is (p, cog) with unit-stride rows
          } else {
            for (int64_t oy = 0; oy < s.oh; ++oy) {
              pack_pairs(gy_n + oy * s.ow, 1, p, s.ow, cog, dst + oy * row_pairs * 2 * cop, cop);
            }
          }
        }
        for (int64_t c = 0; c < cig; ++c) {
          for (int64_t ki = 0; ki < s.kh; ++ki) {
            const int64_t row = (c * s.kh + ki) * s.kw;
            gemm<5, 4>(s.kw, cop, images * image_pairs,
                       PairTable<1>{bordered + c * in.plane() + ki * in.width(), positions.data()}, gy_pairs,
                       2 * cop, dw_t + (g * k + row) * cop, cop, {.accumulate = n0 != first});
          }
        }
      }
    }
    std::lock_guard<std::mutex> lock(merge);
    for (int64_t g = 0; g < s.groups; ++g) {
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t co = 0; co < cog; ++co) total[(g * cog + co) * k + r] += dw_t[(g * k + r) * cop + co];
      }
    }
  });
  float_to_bf16(total.data(), static_cast<Eigen::bfloat16*>(grad_weight.data_ptr()), s.c_out * k);
}

}  // namespace syncgrad::cpu::bf16

#pragma GCC pop_options
