// Winograd F(m x m, RxR) / F(RxR, m x m) conv2d kernels: m = 2 or 4 for R = 3, m = 4 for R = 5 (see winograd.h
// and winograd_transforms.h). The batch's tiles are processed in chunks of consecutive tiles (of one or several
// images): the rows of the chunk's images that its tiles cover are copied into a zero border, its tiles are
// transformed into per-thread scratch, the product GEMMs run, and the results are transformed back. Chunks hold
// enough tiles that each transformed filter bank is read from memory a few times per thread and call at most
// (tiles_per_chunk()), and start at a whole vector of them, so that no lane is wasted where an image's tile count
// is not a multiple of 16. With bfloat16 activations the border copies widen them and each chunk's outputs are
// rounded as they leave it (staged in float32 in the thread's scratch, still in L2): the float32 kernels on
// converted operands, bit for bit, without the converted copies.
#include "tensor/cpu/winograd.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "tensor/cpu/conv_gemm.h"
#include "tensor/cpu/half_convert.h"
#include "tensor/cpu/transpose_tiles.h"
#include "tensor/cpu/winograd_tiles.h"
#include "tensor/cpu/winograd_transforms.h"
#include "tensor/errors.h"
#include "tensor/threads.h"

namespace syncgrad::cpu::winograd {
namespace {

// The sizes of the tiling of an R x R kernel on M x M output tiles.
template <int R, int M>
struct Sizes {
  static constexpr int kOut = Tiling<R, M>::kOut;                 // m: output tile side
  static constexpr int kPatch = Tiling<R, M>::kPatch;             // m + R - 1: patch side
  static constexpr int64_t kProducts = int64_t{kPatch} * kPatch;  // positions of a transformed tile
  static constexpr int64_t kPad = R / 2;                          // the convolution's padding
};

// An image's tiles: m x m output blocks, ceil(h / m) x ceil(w / m) of them (the last row and column may stick
// out of the image: their patches read zeros there and their outputs are clipped), and the bordered planes their
// patches are read from.
struct Geometry {
  int64_t h, w;                        // input = output size
  int64_t m;                           // output tile side
  int64_t tiles_x, tiles_y, tiles_per_image;
  int64_t bw, plane;                   // bordered row width (m * tiles_x + 2 pad) and plane size
  Geometry(int64_t h, int64_t w, int64_t m, int64_t pad)
      : h(h), w(w), m(m), tiles_x((w + m - 1) / m), tiles_y((h + m - 1) / m), tiles_per_image(tiles_x * tiles_y),
        bw(m * tiles_x + 2 * pad), plane((m * tiles_y + 2 * pad) * bw) {}
};

// Tiles [first_tile, first_tile + tiles) of the batch, padded to whole vectors; tile t of image i at (ty, tx) is
// number i * tiles_per_image + ty * tiles_x + tx. They lie in images [first, first + images).
struct Chunk {
  int64_t first_tile, tiles, padded;
  int64_t first, images;
  int64_t ld;   // row stride of arrays with a row of tiles: padded or one vector more (an odd number of vectors)
  int segment;  // how a vector's tiles lie (winograd_tiles.h): runs of 16, 8 or 4 side by side, or 0 (anywhere)
  // Per padded tile: its patch in a bordered stack (channel, images + 1, plane), channel 0; the padding tiles
  // read the zero plane after the last image.
  std::vector<int32_t> patch;
  // Per padded tile: its m x m block in the chunk's (images, channels, h, w) slice, channel 0; padding repeats
  // tile 0.
  std::vector<int32_t> block;
  // Per padded tile: the rows and columns of its block inside the image (winograd_tiles.h, Extent).
  std::vector<Extent> extent;
};

// n (a multiple of kLanes) rounded up to an odd number of vectors, so that rows n floats apart fall into
// different cache sets.
int64_t spread(int64_t n) { return n / kLanes % 2 == 0 ? n + kLanes : n; }

// p + step, through an empty asm statement: a walk over a tile's products then stays in one register. Written as
// p + k * stride, GCC hoists one loop-invariant address per product out of the tile loop and spills most of them.
template <class T>
inline T* opaque_step(T* p, int64_t step) {
  p += step;
  asm("" : "+r"(p));
  return p;
}

// An array (products, rows, ld) of one matrix per transformed position, the matrices an odd number of vectors
// apart too: a tile's products, read or written together, then fall into different cache sets. Position (i, j)
// of a transformed n x n tile is product k = j * n + i (column-major), the order in which two_sided() puts the
// forward transforms out and the (transposed) inverse transforms take them in, so that a tile's products are
// walked through in order.
struct ProductArray {
  int64_t ld, stride;
  ProductArray(int64_t rows, int64_t ld) : ld(ld), stride(spread(rows * ld)) {}
  int64_t size(int64_t products) const { return products * stride; }
  int64_t at(int64_t k, int64_t row) const { return k * stride + row * ld; }
};

// first_tile is a multiple of kLanes, so runs of 16, 8 or 4 tiles side by side start at a vector's lane 0, 8, 4.
// Runs are read as such for whole tiles only (image sides that m divides): of 2x2 tiles runs of 16, 8 or 4 (rows
// of 16 or more tiles, or exactly 8 or 4), of 4x4 tiles runs of 4 (rows of a multiple of 4), in whole vectors
// (runs of 16 2x2 tiles fill every vector of a chunk of whole images).
Chunk make_chunk(const Geometry& g, int64_t first_tile, int64_t tiles, int64_t block_channels) {
  const int64_t first = first_tile / g.tiles_per_image;
  const int64_t images = (first_tile + tiles - 1) / g.tiles_per_image - first + 1;
  Chunk c{first_tile, tiles, 0, first, images, 0, 0, {}, {}, {}};
  c.padded = (c.tiles + kLanes - 1) / kLanes * kLanes;
  c.ld = spread(c.padded);
  const bool whole = g.w % g.m == 0 && g.h % g.m == 0;
  if (g.m == 2 && whole && g.tiles_x % kLanes == 0) c.segment = kLanes;
  else if (g.m == 2 && whole && (g.tiles_x == 8 || g.tiles_x == 4) && c.tiles % kLanes == 0)
    c.segment = static_cast<int>(g.tiles_x);
  else if (g.m == 4 && whole && g.tiles_x % 4 == 0 && c.tiles % kLanes == 0) c.segment = 4;
  c.patch.resize(static_cast<size_t>(c.padded));
  c.block.resize(static_cast<size_t>(c.padded));
  c.extent.resize(static_cast<size_t>(c.padded));
  const int64_t within = first_tile % g.tiles_per_image;
  int64_t i = 0, ty = within / g.tiles_x, tx = within % g.tiles_x;  // the tile's image (in the chunk) and place
  for (int64_t t = 0; t < c.tiles; ++t) {
    c.patch[t] = static_cast<int32_t>(i * g.plane + g.m * ty * g.bw + g.m * tx);
    c.block[t] = static_cast<int32_t>(i * block_channels * g.h * g.w + g.m * ty * g.w + g.m * tx);
    c.extent[t] = {static_cast<uint8_t>(std::min(g.m, g.h - g.m * ty)),
                   static_cast<uint8_t>(std::min(g.m, g.w - g.m * tx))};
    if (++tx == g.tiles_x) {
      tx = 0;
      if (++ty == g.tiles_y) ty = 0, ++i;
    }
  }
  for (int64_t t = c.tiles; t < c.padded; ++t) {
    c.patch[t] = static_cast<int32_t>(images * g.plane);
    c.block[t] = c.block[0];
    c.extent[t] = c.extent[0];
  }
  return c;
}

// Tile rows [begin, end) of the chunk's image i (0: its first) that hold some of its tiles.
struct TileRows {
  int64_t begin, end;
};
TileRows tile_rows(const Chunk& c, const Geometry& g, int64_t i) {
  const int64_t image_first = (c.first + i) * g.tiles_per_image;
  const int64_t first = std::max(c.first_tile, image_first) - image_first;
  const int64_t last = std::min(c.first_tile + c.tiles, image_first + g.tiles_per_image) - image_first;
  return {first / g.tiles_x, (last - 1) / g.tiles_x + 1};
}

// dst[0, n) = src[0, n): whole vectors, then pieces of 8, 4, 2 and 1 floats (copies of a fixed size compile to
// single moves; a library call would cost more than a short row; a 16-float vector's load and store went
// through the stack on AVX2, 7% of a ResNet-20 step on a Zen 3 EPYC).
inline void copy_row(const float* src, int64_t n, float* dst) {
  int64_t x = 0;
  for (; x + kLanes <= n; x += kLanes) std::memcpy(dst + x, src + x, kLanes * sizeof(float));
  auto piece = [&]<int64_t Size>() {
    if ((n - x) & Size) {
      std::memcpy(dst + x, src + x, Size * sizeof(float));
      x += Size;
    }
  };
  piece.template operator()<8>();
  piece.template operator()<4>();
  piece.template operator()<2>();
  piece.template operator()<1>();
}

// dst[0, n) = float(src[0, n)): 16 at a time widened in a vector (a bfloat16 is a float's upper 16 bits), the
// rest one by one.
inline void copy_row(const BF16* src, int64_t n, float* dst) {
  typedef uint16_t Bits __attribute__((vector_size(kLanes * sizeof(uint16_t))));
  typedef uint32_t Wide __attribute__((vector_size(kLanes * sizeof(uint32_t))));
  int64_t x = 0;
  for (; x + kLanes <= n; x += kLanes) {
    Bits bits;
    std::memcpy(&bits, src + x, sizeof bits);
    conv_gemm::store(dst + x, reinterpret_cast<V>(__builtin_convertvector(bits, Wide) << 16));
  }
  for (; x < n; ++x) dst[x] = to_float(src[x]);
}

// dst (channels, images + 1, plane) <- the chunk's images of src (N, channels, h, w) in a zero border (pad
// wide, more on the right and at the bottom where tiles stick out), followed by a zero plane per channel for the
// padding tiles. Only the rows that the chunk's patches cover are written, and of the zero plane the rows of one
// patch when there are padding tiles.
template <int R, int M, class A>
void border(const A* src, int64_t channels, const Chunk& c, const Geometry& g, float* dst) {
  constexpr int64_t pad = Sizes<R, M>::kPad;
  const int64_t stack = (c.images + 1) * g.plane;
  for (int64_t i = 0; i < c.images; ++i) {  // images outside, so that src is read in order
    const TileRows rows = tile_rows(c, g, i);
    for (int64_t ch = 0; ch < channels; ++ch) {
      const A* in = src + ((c.first + i) * channels + ch) * g.h * g.w;
      float* out = dst + ch * stack + i * g.plane;
      for (int64_t yb = g.m * rows.begin; yb < g.m * rows.end + 2 * pad; ++yb) {  // bordered rows
        float* row = out + yb * g.bw;
        const int64_t y = yb - pad;
        if (y < 0 || y >= g.h) {
          std::fill(row, row + g.bw, 0.0f);
          continue;
        }
        for (int64_t x = 0; x < pad; ++x) row[x] = 0.0f;
        copy_row(in + y * g.w, g.w, row + pad);
        for (int64_t x = pad + g.w; x < g.bw; ++x) row[x] = 0.0f;
      }
    }
  }
  if (c.padded > c.tiles) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      float* zero = dst + ch * stack + c.images * g.plane;
      std::fill(zero, zero + Sizes<R, M>::kPatch * g.bw, 0.0f);
    }
  }
}

// Per-thread scratch for border(): the stack (channels, images + 1, plane) and a vector beyond it, read by the
// gathered rows of 6-pixel patches (8 floats each; the last two are not used).
float* bordered_scratch(int64_t channels, const Chunk& c, const Geometry& g) {
  return scratch<float, 10>(channels * (c.images + 1) * g.plane + kLanes);
}

// Calls f.operator()<Segment>() with the chunk's segment as a compile-time constant: 16, 8, 4 or 0 for 2x2 tiles,
// 4 or 0 for 4x4 tiles.
template <int M, class F>
void with_segment(const Chunk& c, const F& f) {
  if constexpr (M == 4) {
    if (c.segment == 4) return f.template operator()<4>();
    return f.template operator()<0>();
  } else {
    switch (c.segment) {
      case 16: return f.template operator()<16>();
      case 8: return f.template operator()<8>();
      case 4: return f.template operator()<4>();
      default: return f.template operator()<0>();
    }
  }
}

// v (products, channels, ld) <- every tile's input-transformed patch B^T d B in every channel of the bordered
// stack.
template <int R, int M>
void transform_inputs(const float* bordered, int64_t channels, const Chunk& c, const Geometry& g,
                      const ProductArray& layout, float* v) {
  constexpr int n = Sizes<R, M>::kPatch, m_out = Sizes<R, M>::kOut;
  using P = TileVector<m_out>;
  const int64_t stack = (c.images + 1) * g.plane;
  with_segment<m_out>(c, [&]<int Segment>() {
    for (int64_t ch = 0; ch < channels; ++ch) {
      const float* base = bordered + ch * stack;
      for (int64_t t0 = 0; t0 < c.padded; t0 += kTileLanes<m_out>) {
        float* product = v + layout.at(0, ch) + t0;
        two_sided<n, n, P>([&](int r, P* row) { load_row<Segment, n>(base + r * g.bw, c.patch.data() + t0, row); },
                           Tiling<R, M>::input, [&](int, int, const P& value) {
                             conv_gemm::store(product, value);
                             product = opaque_step(product, layout.stride);
                           });
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

// Tiles per chunk: about enough that the transformed data is 256 KiB (it then stays in L2) and at least
// min(C_in, C_out) so that the filter bank (products x C_out x C_in floats) is read no more often than the data,
// rounded up to whole images; but no more than a thread's share of the batch's tiles, so that every intra-op
// thread has work (wide layers on small images, such as ResNet-18's last two stages, or a batch of one image
// would otherwise be one chunk: one thread), at the price of each thread reading the bank; in whole vectors.
template <int R, int M>
int64_t tiles_per_chunk(const Geometry& g, int64_t batch, int64_t c_in, int64_t c_out) {
  const int64_t wanted = std::max<int64_t>((int64_t{256} << 10) / (4 * Sizes<R, M>::kProducts * std::max(c_in, c_out)),
                                           std::min(c_in, c_out));
  const int64_t whole_images = (wanted + g.tiles_per_image - 1) / g.tiles_per_image * g.tiles_per_image;
  const int64_t threads = get_num_threads();
  const int64_t share = padded<float>((batch * g.tiles_per_image + threads - 1) / threads);
  return padded<float>(std::min(whole_images, share));
}

// Where a chunk lies in the run of chunks of one thread.
struct RunPosition {
  int64_t index;  // 0 for the thread's first chunk
  bool last;
};

// Runs body(chunk, position) over the batch's tiles in chunks of `chunk_tiles`, split across the intra-op
// threads, each of which takes a run of consecutive chunks.
template <class Body>
void for_chunks(const Geometry& g, int64_t batch, int64_t chunk_tiles, int64_t block_channels, const Body& body) {
  const int64_t total = batch * g.tiles_per_image;
  const int64_t chunks = (total + chunk_tiles - 1) / chunk_tiles;
  for_images(chunks, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      body(make_chunk(g, i * chunk_tiles, std::min(chunk_tiles, total - i * chunk_tiles), block_channels),
           RunPosition{i - first, i + 1 == last});
    }
  });
}

// Output channels per block of the forward's products: blocks of 16, whose products are transformed back while
// they are still in L2, where all products would not fit in 256 KiB but the transformed inputs (read again for
// every block) fit in 512 KiB; else all of them.
int64_t output_block(int64_t products, int64_t c_in, int64_t c_out, int64_t ld) {
  const int64_t bytes = products * ld * static_cast<int64_t>(sizeof(float));
  return bytes * c_out > (int64_t{256} << 10) && bytes * c_in <= (int64_t{512} << 10) ? 16 : c_out;
}

// The forward of one chunk: all its tiles are transformed, then per block of output channels each product's
// GEMM reads its filters once and the products are transformed back.
template <int R, int M>
void forward_chunk(const float* bordered, int64_t c_in, const float* u, const float* bias, float* out,
                   int64_t c_out, const Chunk& c, const Geometry& g) {
  constexpr int n = Sizes<R, M>::kPatch, m_out = Sizes<R, M>::kOut;
  constexpr int64_t products = Sizes<R, M>::kProducts;
  using P = TileVector<m_out>;
  const int64_t plane_out = g.h * g.w, block = output_block(products, c_in, c_out, c.ld);
  const ProductArray v_layout(c_in, c.ld), m_layout(block, c.ld);
  float* v = scratch<float, 11>(v_layout.size(products));
  transform_inputs<R, M>(bordered, c_in, c, g, v_layout, v);
  float* m = scratch<float, 12>(m_layout.size(products));
  for (int64_t co0 = 0; co0 < c_out; co0 += block) {
    const int64_t rows = std::min(block, c_out - co0);
    for (int64_t k = 0; k < products; ++k) {
      product_gemm(rows, c.padded, c_in, u + (k * c_out + co0) * c_in, c_in, v + v_layout.at(k, 0), c.ld,
                   m + m_layout.at(k, 0), c.ld, false);
    }
    with_segment<Sizes<R, M>::kOut>(c, [&]<int Segment>() {
      for (int64_t co = co0; co < co0 + rows; ++co) {
        const float b = bias != nullptr ? bias[co] : 0.0f;
        const float* m_co = m + m_layout.at(0, co - co0);
        for (int64_t t0 = 0; t0 < c.padded; t0 += kTileLanes<m_out>) {
          const int lanes = static_cast<int>(std::min(kTileLanes<m_out>, c.tiles - t0));
          if (lanes <= 0) break;
          P y[m_out * m_out];
          // (A^T m A)^T = A^T m^T A: rows of m^T are consecutive products.
          const float* product = m_co + t0;
          two_sided<m_out, n, P>(
              [&](int, P* row) {
                for (int i = 0; i < n; ++i, product = opaque_step(product, m_layout.stride)) {
                  row[i] = conv_gemm::load<float, P>(product);
                }
              },
              Tiling<R, M>::output, [&](int i, int j, const P& value) { y[j * m_out + i] = value + b; });
          store_blocks<Segment, m_out>(out + co * plane_out, g.w, c.block.data() + t0, c.extent.data() + t0, y, lanes);
        }
      }
    });
  }
}

// out (N, channels, h, w) as bfloat16 <- the chunk's output blocks from `staged`, its (images, channels, h, w)
// slice in float32: per tile row of the chunk and channel, the pixel rows of its tiles (one span where the tile
// row is whole), so that pixels of other chunks' tiles, written by other threads, are not touched.
void round_blocks(const float* staged, int64_t channels, const Chunk& c, const Geometry& g, BF16* out) {
  const int64_t plane = g.h * g.w;
  BF16* out_chunk = out + c.first * channels * plane;
  for (int64_t i = 0; i < c.images; ++i) {
    const TileRows rows = tile_rows(c, g, i);
    for (int64_t ty = rows.begin; ty < rows.end; ++ty) {
      const int64_t row_first = (c.first + i) * g.tiles_per_image + ty * g.tiles_x;  // tile (ty, 0) of the image
      const int64_t x0 = g.m * std::max<int64_t>(c.first_tile - row_first, 0);
      const int64_t x1 = std::min(g.m * std::min(c.first_tile + c.tiles - row_first, g.tiles_x), g.w);
      const int64_t y0 = g.m * ty, y1 = std::min(y0 + g.m, g.h);
      for (int64_t ch = 0; ch < channels; ++ch) {
        const int64_t at = (i * channels + ch) * plane;
        if (x0 == 0 && x1 == g.w) {
          float_to_bf16(staged + at + y0 * g.w, out_chunk + at + y0 * g.w, (y1 - y0) * g.w);
          continue;
        }
        for (int64_t y = y0; y < y1; ++y) {
          float_to_bf16(staged + at + y * g.w + x0, out_chunk + at + y * g.w + x0, x1 - x0);
        }
      }
    }
  }
}

// out (N, c_out, h, w) = the convolution of in (N, c_in, h, w) with the transformed filters
// u (products, c_out, c_in), plus bias (c_out; may be null); activations A = float or bfloat16.
template <int R, int M, class A>
void run_forward(const A* in, int64_t c_in, const float* u, const float* bias, A* out, int64_t c_out,
                 int64_t batch, const Geometry& g) {
  for_chunks(g, batch, tiles_per_chunk<R, M>(g, batch, c_in, c_out), c_out, [&](const Chunk& c, RunPosition) {
    float* bordered = bordered_scratch(c_in, c, g);
    border<R, M>(in, c_in, c, g, bordered);
    if constexpr (std::is_same_v<A, float>) {
      forward_chunk<R, M>(bordered, c_in, u, bias, out + c.first * c_out * g.h * g.w, c_out, c, g);
    } else {
      float* staged = scratch<float, 15>(c.images * c_out * g.h * g.w);
      forward_chunk<R, M>(bordered, c_in, u, bias, staged, c_out, c, g);
      round_blocks(staged, c_out, c, g, out);
    }
  });
}

// 8 filters in double.
typedef double Filters __attribute__((vector_size(8 * sizeof(double))));
constexpr int64_t kFilters = 8;

// u (products, rows, cols) <- the transformed RxR filters G g G^T; filter (r, c) is w + (r * cols + c) * R * R
// when !swap, else the 180-degree rotation of w + (c * rows + r) * R * R (the filters of the input gradient). In
// the calling thread's scratch; transformed in double, 8 filters at a time, rounded once, rows split over the
// intra-op threads.
template <int R, int M>
const float* transformed_filters(const float* w, int64_t rows, int64_t cols, bool swap) {
  constexpr int n = Sizes<R, M>::kPatch, taps = R * R;
  float* u = scratch<float, 16>(Sizes<R, M>::kProducts * rows * cols);
  parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    Filters g[taps], t[n * n];
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c0 = 0; c0 < cols; c0 += kFilters) {
        const int64_t count = std::min(kFilters, cols - c0);
        for (int64_t l = 0; l < kFilters; ++l) {
          const int64_t c = c0 + std::min(l, count - 1);
          const float* src = swap ? w + (c * rows + r) * taps : w + (r * cols + c) * taps;
          for (int i = 0; i < taps; ++i) g[i][l] = swap ? src[taps - 1 - i] : src[i];
        }
        two_sided<n, R>(g, t, Tiling<R, M>::filter);
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            float* dst = u + ((j * n + i) * rows + r) * cols + c0;
            for (int64_t l = 0; l < count; ++l) dst[l] = static_cast<float>(t[i * n + j][l]);
          }
        }
      }
    }
  });
  return u;
}

// 8 filters from p[0, 8), as doubles.
Filters load_filters(const double* p) {
  Filters f;
  std::memcpy(&f, p, sizeof f);
  return f;
}
Filters load_filters(const float* p) {
  typedef float FloatFilters __attribute__((vector_size(kFilters * sizeof(float))));
  FloatFilters f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, Filters);
}

// gw (C_out, C_in, R, R) = C^T S C per filter, from the sums S^T (products, C_in, cop) over all tiles (float32
// or double); in double, 8 filters (output channels) at a time.
template <int R, int M, class Sum>
void weight_outputs(const Sum* sums, int64_t c_out, int64_t c_in, int64_t cop, float* gw) {
  constexpr int n = Sizes<R, M>::kPatch, taps = R * R;
  Filters m[n * n], out[taps];
  for (int64_t ci = 0; ci < c_in; ++ci) {
    for (int64_t co0 = 0; co0 < c_out; co0 += kFilters) {  // cop is a multiple of kFilters
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          m[i * n + j] = load_filters(sums + ((j * n + i) * c_in + ci) * cop + co0);
        }
      }
      two_sided<R, n>(m, out, Tiling<R, M>::weight_output);
      for (int64_t l = 0; l < std::min(kFilters, c_out - co0); ++l) {
        for (int q = 0; q < taps; ++q) gw[((co0 + l) * c_in + ci) * taps + q] = static_cast<float>(out[q][l]);
      }
    }
  }
}

template <int R, int M, class A>
void convolve(const A* x, const float* w, const float* bias, A* y, const ConvShape& s) {
  run_forward<R, M>(x, s.c_in, transformed_filters<R, M>(w, s.c_out, s.c_in, false), bias, y, s.c_out, s.batch,
                    Geometry(s.h, s.w, Sizes<R, M>::kOut, Sizes<R, M>::kPad));
}

template <int R, int M, class A>
void input_gradient(const A* gy, const float* w, A* gx, const ConvShape& s) {
  run_forward<R, M>(gy, s.c_out, transformed_filters<R, M>(w, s.c_in, s.c_out, true), nullptr, gx, s.c_in, s.batch,
                    Geometry(s.h, s.w, Sizes<R, M>::kOut, Sizes<R, M>::kPad));
}

// Tiles summed into a thread's float32 sums before they are added to the total.
constexpr int64_t kTilesPerFlush = 256;
// Flushes up to which the total is float32 (a few more roundings than the per-thread sums themselves); beyond,
// it is double.
constexpr int64_t kFloatTotalFlushes = 4;

// The weight gradient as S^T_k (C_in, cop) = sum over chunks of V_k (C_in, T) * E^T_k (T, cop): V as in the
// forward, E^T from the output gradient with its channels along vectors (each chunk's images transposed to
// (h * w, cop) first). Each thread sums about kTilesPerFlush tiles in float32 (its GEMMs) and adds them into a
// total of type Total: double when there are many flushes (the products are many times larger than the
// patches, and a float32 running sum over a whole batch of tiles would lose several bits), float32 when all
// threads together flush at most kFloatTotalFlushes times (ResNet-18's 256- and 512-channel layers: 36 x 256 x
// 256 or 16 x 512 x 512 sums, whose double copy and transform cost several percent of the call).
template <int R, int M, class Total, class A>
void weight_gradient_summed(const A* gy, const A* x, float* gw, const ConvShape& s, int64_t chunk_tiles,
                            int64_t chunks_per_flush) {
  constexpr int n = Sizes<R, M>::kPatch, m_out = Sizes<R, M>::kOut;
  constexpr int64_t products = Sizes<R, M>::kProducts;
  using P = TileVector<m_out>;
  const Geometry g(s.h, s.w, m_out, Sizes<R, M>::kPad);
  const int64_t c_in = s.c_in, c_out = s.c_out, cop = padded<float>(c_out), plane = g.h * g.w;
  const int64_t lde = spread(cop);
  const int64_t sums_size = products * c_in * cop;  // S^T (products, C_in, cop)
  Total* total = scratch<Total, 18>(sums_size);  // the calling thread's; under `merge` the first flush of the
  bool empty = true;                             // call assigns, the others add
  std::mutex merge;
  // Block offsets count pixels of (images, h * w) (block_channels 1).
  for_chunks(g, s.batch, chunk_tiles, 1, [&](const Chunk& c, RunPosition run) {
    float* bordered = bordered_scratch(c_in, c, g);
    border<R, M>(x, c_in, c, g, bordered);
    const ProductArray v_layout(c_in, c.ld), e_layout(c.padded, lde);
    float* v = scratch<float, 11>(v_layout.size(products));
    transform_inputs<R, M>(bordered, c_in, c, g, v_layout, v);
    // gyt (images, h * w, cop): the chunk's images of the output gradient, channels last (padding channels zero):
    // the pixels of the chunk's tiles, widened to whole vectors where the plane allows (so that the transposition
    // runs on whole blocks).
    float* gyt = scratch<float, 12>(c.images * plane * cop);
    for (int64_t i = 0; i < c.images; ++i) {
      const TileRows rows = tile_rows(c, g, i);
      int64_t first = m_out * rows.begin * g.w, pixels = std::min(m_out * rows.end, g.h) * g.w - first;
      if (padded<float>(pixels) <= plane) {
        pixels = padded<float>(pixels);
        first = std::min(first, plane - pixels);
      }
      const A* gy_image = gy + (c.first + i) * c_out * plane + first;
      if constexpr (std::is_same_v<A, float>) {
        transpose(gy_image, c_out, pixels, plane, gyt + (i * plane + first) * cop, cop);
      } else {  // widened into (c_out, pixels) first
        float* wide = scratch<float, 15>(c_out * pixels);
        for (int64_t co = 0; co < c_out; ++co) copy_row(gy_image + co * plane, pixels, wide + co * pixels);
        transpose(wide, c_out, pixels, pixels, gyt + (i * plane + first) * cop, cop);
      }
    }
    // e (products, padded, lde): E^T (the padding tiles repeat tile 0; their V columns are zero). Pixels of a
    // block outside the image are zero.
    float* e = scratch<float, 13>(e_layout.size(products));
    for (int64_t t = 0; t < c.padded; ++t) {
      const float* block = gyt + c.block[t] * cop;
      const Extent extent = c.extent[t];
      for (int64_t c0 = 0; c0 < cop; c0 += kTileLanes<m_out>) {
        float* product = e + e_layout.at(0, t) + c0;
        two_sided<n, m_out, P>(
            [&](int a, P* row) {
              for (int b = 0; b < m_out; ++b) {
                row[b] = a < extent.rows && b < extent.cols ? conv_gemm::load<float, P>(block + (a * g.w + b) * cop + c0)
                                                            : P{};
              }
            },
            Tiling<R, M>::gradient, [&](int, int, const P& value) {
              conv_gemm::store(product, value);
              product = opaque_step(product, e_layout.stride);
            });
      }
    }
    float* sums = scratch<float, 14>(sums_size);
    for (int64_t k = 0; k < products; ++k) {
      product_gemm(c_in, cop, c.padded, v + v_layout.at(k, 0), c.ld, e + e_layout.at(k, 0), lde,
                   sums + k * c_in * cop, cop, run.index % chunks_per_flush != 0);
    }
    if ((run.index + 1) % chunks_per_flush == 0 || run.last) {
      std::lock_guard<std::mutex> lock(merge);
      if (empty) {
        std::copy(sums, sums + sums_size, total);
      } else {
        for (int64_t i = 0; i < sums_size; ++i) total[i] += sums[i];
      }
      empty = false;
    }
  });
  weight_outputs<R, M>(total, c_out, c_in, cop, gw);
}

template <int R, int M, class A>
void weight_gradient(const A* gy, const A* x, float* gw, const ConvShape& s) {
  const Geometry g(s.h, s.w, Sizes<R, M>::kOut, Sizes<R, M>::kPad);
  const int64_t chunk_tiles = tiles_per_chunk<R, M>(g, s.batch, s.c_in, s.c_out);
  const int64_t chunks_per_flush = std::max<int64_t>(1, kTilesPerFlush / chunk_tiles);
  // for_chunks gives each thread a run of consecutive chunks, which flushes every chunks_per_flush chunks and
  // at its end: at most one flush per chunks_per_flush chunks, plus one per further thread.
  const int64_t chunks = (s.batch * g.tiles_per_image + chunk_tiles - 1) / chunk_tiles;
  const int64_t flushes = (chunks + chunks_per_flush - 1) / chunks_per_flush + get_num_threads() - 1;
  if (flushes <= kFloatTotalFlushes) {
    weight_gradient_summed<R, M, float, A>(gy, x, gw, s, chunk_tiles, chunks_per_flush);
  } else {
    weight_gradient_summed<R, M, double, A>(gy, x, gw, s, chunk_tiles, chunks_per_flush);
  }
}

// Calls f.operator()<R, M>() with the shape's kernel size and the tile side as compile-time constants; refuses a
// tiling the kernels do not have for the shape.
template <class F>
void with_tiling(const ConvShape& s, int64_t tile, const F& f) {
  if (!supported(s, tile)) {
    throw ValueError("winograd: no " + std::to_string(tile) + "x" + std::to_string(tile) + "-tile kernel for this " +
                     std::to_string(s.kh) + "x" + std::to_string(s.kw) + " convolution (tilings: F(2x2, 3x3), " +
                     "F(4x4, 3x3), F(4x4, 5x5); stride 1, same padding, enough channels, 32-bit offsets; check " +
                     "supported(shape, tile) first)");
  }
  if (s.kh == 5) return f.template operator()<5, 4>();
  if (tile == 4) return f.template operator()<3, 4>();
  return f.template operator()<3, 2>();
}

}  // namespace

// The fewest channels for which the Winograd kernels beat the implicit GEMM (docs/BENCHMARKS.md, "Winograd
// convolutions for 5x5 kernels"): below them (an RGB stem for 3x3, a grayscale input for 5x5) the transforms cost
// more than the saved multiplications in the forward pass and the weight gradient. With 5x5 kernels 4 input
// channels break even on the forward pass and win on both gradients, and few output channels win on the forward
// pass and the weight gradient.
int64_t min_input_channels(int64_t kernel) { return kernel == 3 ? 8 : 4; }
int64_t min_output_channels(int64_t kernel) { return kernel == 3 ? 8 : 1; }

bool has_tiling(int64_t kernel, int64_t tile) {
  return (kernel == 3 && (tile == 2 || tile == 4)) || (kernel == 5 && tile == 4);
}

// F(4x4, 3x3) does 1.78x fewer multiplications than F(2x2, 3x3) and writes 1.78x fewer transformed values for
// about the same transform work per output; it ran the ResNets' layers 1.13-1.52x faster in every pass
// (`syncgrad-bench winograd`) except on 4x4 images, where each image is one tile: there the input gradient was no
// faster and the weight gradient took 1.2-1.3x longer, more than the forward pass's 1.2x gained.
int64_t tile_side(const ConvShape& s) { return s.kh == 5 || s.h > 4 || s.w > 4 ? 4 : 2; }

bool supported(const ConvShape& s, int64_t tile) {
  if (s.kw != s.kh || !has_tiling(s.kh, tile)) return false;
  const int64_t pad = s.kh / 2;
  const Geometry g(s.h, s.w, tile, pad);
  const int64_t limit = std::numeric_limits<int32_t>::max() / 2;
  return s.p.stride == Size2(1) && s.p.padding == Size2(pad) && s.p.dilation == Size2(1) && s.groups == 1 &&
         s.batch >= 1 && s.h >= 1 && s.w >= 1 && s.c_in >= min_input_channels(s.kh) && s.c_out >= min_output_channels(s.kh) &&
         (s.batch + 1) * std::max(s.c_in, s.c_out) * g.plane < limit;
}

bool supported(const ConvShape& s) { return supported(s, tile_side(s)); }

template <class A>
void forward(const A* x, const float* w, const float* bias, A* y, const ConvShape& s, int64_t tile) {
  with_tiling(s, tile, [&]<int R, int M>() { convolve<R, M>(x, w, bias, y, s); });
}

template <class A>
void backward_input(const A* gy, const float* w, A* gx, const ConvShape& s, int64_t tile) {
  with_tiling(s, tile, [&]<int R, int M>() { input_gradient<R, M>(gy, w, gx, s); });
}

template <class A>
void backward_weight(const A* gy, const A* x, float* gw, const ConvShape& s, int64_t tile) {
  with_tiling(s, tile, [&]<int R, int M>() { weight_gradient<R, M>(gy, x, gw, s); });
}

template <class A>
void forward(const A* x, const float* w, const float* bias, A* y, const ConvShape& s) {
  forward(x, w, bias, y, s, tile_side(s));
}

template <class A>
void backward_input(const A* gy, const float* w, A* gx, const ConvShape& s) {
  backward_input(gy, w, gx, s, tile_side(s));
}

template <class A>
void backward_weight(const A* gy, const A* x, float* gw, const ConvShape& s) {
  backward_weight(gy, x, gw, s, tile_side(s));
}

template void forward(const float*, const float*, const float*, float*, const ConvShape&, int64_t);
template void backward_input(const float*, const float*, float*, const ConvShape&, int64_t);
template void backward_weight(const float*, const float*, float*, const ConvShape&, int64_t);
template void forward(const float*, const float*, const float*, float*, const ConvShape&);
template void backward_input(const float*, const float*, float*, const ConvShape&);
template void backward_weight(const float*, const float*, float*, const ConvShape&);
template void forward(const BF16*, const float*, const float*, BF16*, const ConvShape&, int64_t);
template void backward_input(const BF16*, const float*, BF16*, const ConvShape&, int64_t);
template void backward_weight(const BF16*, const BF16*, float*, const ConvShape&, int64_t);
template void forward(const BF16*, const float*, const float*, BF16*, const ConvShape&);
template void backward_input(const BF16*, const float*, BF16*, const ConvShape&);
template void backward_weight(const BF16*, const BF16*, float*, const ConvShape&);

}  // namespace syncgrad::cpu::winograd
