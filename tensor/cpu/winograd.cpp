// Winograd F(2x2, 3x3) / F(3x3, 2x2) conv2d kernels (see winograd.h). The batch is processed in chunks of whole
// images: each chunk is copied into a zero border, its tiles are transformed into per-thread scratch, the 16
// product GEMMs run, and the results are transformed back. Chunks hold enough tiles that each transformed
// filter bank is read from memory a few times per call at most.
#include "tensor/cpu/winograd.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <vector>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/transpose_tiles.h"
#include "tensor/cpu/winograd_tiles.h"

namespace syncgrad::cpu::winograd {
namespace {

constexpr int64_t kProducts = 16;  // positions of a transformed 4x4 tile

struct Geometry {
  int64_t h, w;              // input = output size
  int64_t bw, plane;         // bordered row width and plane size
  int64_t tiles_per_image;   // (h / 2) * (w / 2)
  Geometry(int64_t h, int64_t w)
      : h(h), w(w), bw(w + 2), plane((h + 2) * (w + 2)), tiles_per_image(h / 2 * (w / 2)) {}
};

// Images [first, first + images) and their tiles, padded to whole vectors (tile t of image i at (ty, tx) is
// number (i - first) * tiles_per_image + ty * w / 2 + tx).
struct Chunk {
  int64_t first, images, tiles, padded;
  int64_t ld;   // row stride of arrays with a row of tiles: padded or one vector more (an odd number of vectors)
  int segment;  // how a vector's tiles lie (winograd_tiles.h): runs of 16, 8 or 4 side by side, or 0 (anywhere)
  // Per padded tile: its 4x4 patch in a bordered stack (channel, images + 1, h + 2, w + 2), channel 0; the
  // padding tiles read the zero plane after the last image.
  std::vector<int32_t> patch;
  // Per padded tile: its 2x2 block in the chunk's (images, channels, h, w) slice, channel 0; padding repeats
  // tile 0.
  std::vector<int32_t> block;
};

// n (a multiple of kLanes) rounded up to an odd number of vectors, so that rows n floats apart fall into
// different cache sets.
int64_t spread(int64_t n) { return n / kLanes % 2 == 0 ? n + kLanes : n; }

Chunk make_chunk(const Geometry& g, int64_t first, int64_t images, int64_t block_channels) {
  Chunk c{first, images, images * g.tiles_per_image, 0, 0, 0, {}, {}};
  c.padded = (c.tiles + kLanes - 1) / kLanes * kLanes;
  c.ld = spread(c.padded);
  const int64_t tiles_x = g.w / 2;
  if (tiles_x % kLanes == 0) c.segment = kLanes;
  else if ((tiles_x == 8 || tiles_x == 4) && c.tiles % kLanes == 0) c.segment = static_cast<int>(tiles_x);
  c.patch.resize(static_cast<size_t>(c.padded));
  c.block.resize(static_cast<size_t>(c.padded));
  for (int64_t t = 0; t < c.padded; ++t) {
    if (t < c.tiles) {
      const int64_t i = t / g.tiles_per_image, within = t % g.tiles_per_image;
      const int64_t ty = within / (g.w / 2), tx = within % (g.w / 2);
      c.patch[t] = static_cast<int32_t>(i * g.plane + 2 * ty * g.bw + 2 * tx);
      c.block[t] = static_cast<int32_t>(i * block_channels * g.h * g.w + 2 * ty * g.w + 2 * tx);
    } else {
      c.patch[t] = static_cast<int32_t>(images * g.plane);
      c.block[t] = c.block[0];
    }
  }
  return c;
}

// dst (channels, images + 1, h + 2, w + 2) <- the chunk's images of src (N, channels, h, w) in a zero border,
// followed by a zero plane per channel.
void border(const float* src, int64_t channels, const Chunk& c, const Geometry& g, float* dst) {
  const int64_t stack = (c.images + 1) * g.plane;
  const int64_t vector_part = g.w / kLanes * kLanes;
  for (int64_t ch = 0; ch < channels; ++ch) {
    float* out = dst + ch * stack;
    for (int64_t i = 0; i < c.images; ++i, out += g.plane) {
      const float* in = src + ((c.first + i) * channels + ch) * g.h * g.w;
      std::fill(out, out + g.bw + 1, 0.0f);  // top row, left border of row 1
      for (int64_t y = 0; y < g.h; ++y, in += g.w) {
        float* row = out + (y + 1) * g.bw + 1;
        for (int64_t x = 0; x < vector_part; x += kLanes) conv_gemm::store(row + x, conv_gemm::load(in + x));
        for (int64_t x = vector_part; x < g.w; ++x) row[x] = in[x];
        row[g.w] = row[g.w + 1] = 0.0f;  // right border, left border of the next row
      }
      std::fill(out + (g.h + 1) * g.bw + 1, out + g.plane, 0.0f);  // rest of the bottom row
    }
    std::fill(out, out + g.plane, 0.0f);
  }
}

// Calls f.operator()<Segment>() with the chunk's segment as a compile-time constant.
template <class F>
void with_segment(const Chunk& c, const F& f) {
  switch (c.segment) {
    case 16: return f.template operator()<16>();
    case 8: return f.template operator()<8>();
    case 4: return f.template operator()<4>();
    default: return f.template operator()<0>();
  }
}

// The 16 input-transformed patches of tiles [t0, t0 + 16) in channel plane stack `base`.
template <int Segment>
void transformed_patches(const float* base, const Chunk& c, const Geometry& g, int64_t t0, V* d) {
  load_patches<Segment>(base, g.bw, c.patch.data() + t0, d);
  input_transform(d);
}

// v (16, channels, ld) <- every tile's transformed patch in every channel of the bordered stack.
void transform_inputs(const float* bordered, int64_t channels, const Chunk& c, const Geometry& g, float* v) {
  const int64_t stack = (c.images + 1) * g.plane;
  with_segment(c, [&]<int Segment>() {
    V d[kProducts];
    for (int64_t ch = 0; ch < channels; ++ch) {
      for (int64_t t0 = 0; t0 < c.padded; t0 += kLanes) {
        transformed_patches<Segment>(bordered + ch * stack, c, g, t0, d);
        for (int64_t k = 0; k < kProducts; ++k) conv_gemm::store(v + (k * channels + ch) * c.ld + t0, d[k]);
      }
    }
  });
}

// c (m, n) (+)= a (m, k; rows lda apart) * b (k, n; rows ldb apart); n is a multiple of kLanes. Short products
// (few input channels) use 8 x 2-vector tiles, which waste no rows of 8, 16 or 32 output channels.
void product_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* c, int64_t ldc, bool accumulate) {
  const conv_gemm::StridedA<float> rows{a, lda, 1};
  if (m % 8 == 0 && k <= 64 && n % (2 * kLanes) == 0) {
    conv_gemm::gemm<float, 8, 2>(m, n, k, rows, b, ldb, c, ldc, {.accumulate = accumulate});
  } else if (n % (4 * kLanes) == 0) {
    conv_gemm::gemm<float, 6, 4>(m, n, k, rows, b, ldb, c, ldc, {.accumulate = accumulate});
  } else {
    conv_gemm::gemm<float, 8, 3>(m, n, k, rows, b, ldb, c, ldc, {.accumulate = accumulate});
  }
}

// Images per chunk: enough tiles that the transformed data is about 256 KiB (it then stays in L2), and at least
// min(C_in, C_out) tiles so that the filter bank (16 C_out C_in floats) is read no more often than the data.
int64_t images_per_chunk(const Geometry& g, int64_t batch, int64_t c_in, int64_t c_out) {
  const int64_t wanted = std::max<int64_t>((int64_t{256} << 10) / (64 * std::max(c_in, c_out)), std::min(c_in, c_out));
  return std::clamp<int64_t>((wanted + g.tiles_per_image - 1) / g.tiles_per_image, 1, batch);
}

// Runs body(chunk) over the batch in chunks, split across the intra-op threads.
template <class Body>
void for_chunks(const Geometry& g, int64_t batch, int64_t images, int64_t block_channels, const Body& body) {
  const int64_t chunks = (batch + images - 1) / images;
  for_images(chunks, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      body(make_chunk(g, i * images, std::min(images, batch - i * images), block_channels));
    }
  });
}

// The forward of one chunk: all its tiles are transformed, then each of the 16 GEMMs reads its filters once.
void forward_chunk(const float* bordered, int64_t c_in, const float* u, const float* bias, float* out,
                   int64_t c_out, const Chunk& c, const Geometry& g) {
  const int64_t plane_out = g.h * g.w;
  float* v = scratch<float, 11>(kProducts * c_in * c.ld);
  transform_inputs(bordered, c_in, c, g, v);
  float* m = scratch<float, 12>(kProducts * c_out * c.ld);
  for (int64_t k = 0; k < kProducts; ++k) {
    product_gemm(c_out, c.padded, c_in, u + k * c_out * c_in, c_in, v + k * c_in * c.ld, c.ld, m + k * c_out * c.ld,
                 c.ld, false);
  }
  with_segment(c, [&]<int Segment>() {
    V prod[kProducts], y[4];
    for (int64_t co = 0; co < c_out; ++co) {
      const float b = bias != nullptr ? bias[co] : 0.0f;
      for (int64_t t0 = 0; t0 < c.padded; t0 += kLanes) {
        for (int64_t k = 0; k < kProducts; ++k) prod[k] = conv_gemm::load(m + (k * c_out + co) * c.ld + t0);
        output_transform(prod, y);
        for (V& yi : y) yi += b;
        store_blocks<Segment>(out + co * plane_out, g.w, c.block.data() + t0, y,
                              static_cast<int>(std::min(kLanes, c.tiles - t0)));
      }
    }
  });
}

// out (N, c_out, h, w) = the convolution of in (N, c_in, h, w) with the transformed filters u (16, c_out, c_in),
// plus bias (c_out; may be null).
void run_forward(const float* in, int64_t c_in, const float* u, const float* bias, float* out, int64_t c_out,
                 int64_t batch, const Geometry& g) {
  for_chunks(g, batch, images_per_chunk(g, batch, c_in, c_out), c_out, [&](const Chunk& c) {
    float* bordered = scratch<float, 10>(c_in * (c.images + 1) * g.plane);
    border(in, c_in, c, g, bordered);
    float* out_chunk = out + c.first * c_out * g.h * g.w;
    forward_chunk(bordered, c_in, u, bias, out_chunk, c_out, c, g);
  });
}

// u (16, rows, cols) <- the transformed 3x3 filters; filter (r, c) is w + (r * cols + c) * 9 when !swap, else
// the 180-degree rotation of w + (c * rows + r) * 9 (the filters of the input gradient). In per-thread scratch.
const float* transformed_filters(const float* w, int64_t rows, int64_t cols, bool swap) {
  float* u = scratch<float, 16>(kProducts * rows * cols);
  float g[9], t[kProducts];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float* src = swap ? w + (c * rows + r) * 9 : w + (r * cols + c) * 9;
      for (int i = 0; i < 9; ++i) g[i] = swap ? src[8 - i] : src[i];
      filter_transform(g, t);
      for (int64_t k = 0; k < kProducts; ++k) u[(k * rows + r) * cols + c] = t[k];
    }
  }
  return u;
}

}  // namespace

// Below this many input or output channels (a network's RGB stem) the transforms outweigh the saved
// multiplications, and the implicit GEMM is faster.
constexpr int64_t kMinChannels = 8;

bool supported(const ConvShape& s) {
  const int64_t limit = std::numeric_limits<int32_t>::max() / 2;
  return s.kh == 3 && s.kw == 3 && s.p.stride == Size2(1) && s.p.padding == Size2(1) && s.p.dilation == Size2(1) &&
         s.groups == 1 && s.h % 2 == 0 && s.w % 2 == 0 && s.h >= 2 && s.w >= 2 && s.c_in >= kMinChannels &&
         s.c_out >= kMinChannels &&
         s.batch * std::max(s.c_in, s.c_out) * (s.h + 2) * (s.w + 2) < limit;
}

void forward(const float* x, const float* w, const float* bias, float* y, const ConvShape& s) {
  run_forward(x, s.c_in, transformed_filters(w, s.c_out, s.c_in, false), bias, y, s.c_out, s.batch,
              Geometry(s.h, s.w));
}

void backward_input(const float* gy, const float* w, float* gx, const ConvShape& s) {
  run_forward(gy, s.c_out, transformed_filters(w, s.c_in, s.c_out, true), nullptr, gx, s.c_in, s.batch,
              Geometry(s.h, s.w));
}

void backward_weight(const float* gy, const float* x, float* gw, const ConvShape& s) {
  const Geometry g(s.h, s.w);
  const int64_t c_in = s.c_in, c_out = s.c_out, cip = padded<float>(c_in), plane = g.h * g.w;
  const int64_t ldv = spread(cip);
  const int64_t sums_size = kProducts * c_out * cip;  // S (16, C_out, cip)
  float* total = scratch<float, 17>(sums_size);  // the calling thread's; workers add into it under `merge`
  std::fill(total, total + sums_size, 0.0f);
  std::mutex merge;
  const bool threaded = get_num_threads() > 1;
  for_chunks(g, s.batch, images_per_chunk(g, s.batch, c_in, c_out), c_out, [&](const Chunk& c) {
    float* bordered = scratch<float, 10>(c_in * (c.images + 1) * g.plane);
    border(x, c_in, c, g, bordered);
    const int64_t stack = (c.images + 1) * g.plane;
    // vt (16, padded, ldv): the transformed patches with channels along rows, 16 channels x 16 tiles at a time;
    // e (16, C_out, ld): the transformed 2x2 blocks of the output gradient.
    float* vt = scratch<float, 13>(kProducts * c.padded * ldv);
    float* e = scratch<float, 14>(kProducts * c_out * c.ld);
    with_segment(c, [&]<int Segment>() {
      alignas(64) float staged[kProducts][kLanes][kLanes];  // [k][channel][tile]
      V d[kProducts], rows[kLanes];
      for (int64_t c0 = 0; c0 < cip; c0 += kLanes) {
        for (int64_t t0 = 0; t0 < c.padded; t0 += kLanes) {
          for (int64_t j = 0; j < kLanes; ++j) {
            if (c0 + j < c_in) transformed_patches<Segment>(bordered + (c0 + j) * stack, c, g, t0, d);
            else std::fill(d, d + kProducts, V{});
            for (int64_t k = 0; k < kProducts; ++k) conv_gemm::store(staged[k][j], d[k]);
          }
          for (int64_t k = 0; k < kProducts; ++k) {
            for (int64_t j = 0; j < kLanes; ++j) rows[j] = conv_gemm::load(staged[k][j]);
            transpose_block<float>(rows);
            for (int64_t l = 0; l < kLanes; ++l) conv_gemm::store(vt + (k * c.padded + t0 + l) * ldv + c0, rows[l]);
          }
        }
      }
      // e (16, C_out, ld): the transformed 2x2 blocks of the output gradient.
      const float* gy_chunk = gy + c.first * c_out * plane;
      V block[4];
      for (int64_t co = 0; co < c_out; ++co) {
        for (int64_t t0 = 0; t0 < c.padded; t0 += kLanes) {
          load_blocks<Segment>(gy_chunk + co * plane, g.w, c.block.data() + t0, block);
          gradient_transform(block, d);
          for (int64_t k = 0; k < kProducts; ++k) conv_gemm::store(e + (k * c_out + co) * c.ld + t0, d[k]);
        }
      }
    });
    float* sums = threaded ? scratch<float, 15>(sums_size) : total;
    if (threaded) std::fill(sums, sums + sums_size, 0.0f);
    for (int64_t k = 0; k < kProducts; ++k) {
      product_gemm(c_out, cip, c.padded, e + k * c_out * c.ld, c.ld, vt + k * c.padded * ldv, ldv,
                   sums + k * c_out * cip, cip, true);
    }
    if (threaded) {
      std::lock_guard<std::mutex> lock(merge);
      for (int64_t i = 0; i < sums_size; ++i) total[i] += sums[i];
    }
  });
  for (int64_t co = 0; co < c_out; ++co) {
    for (int64_t ci = 0; ci < c_in; ++ci) {
      weight_output_transform(total + co * cip + ci, c_out * cip, gw + (co * c_in + ci) * 9);
    }
  }
}

}  // namespace syncgrad::cpu::winograd
