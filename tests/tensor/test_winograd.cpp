// The Winograd conv2d kernels (tensor/cpu/winograd.h: float32, 3x3 padding 1 on 2x2 and 4x4 tiles and 5x5 padding
// 2 on 4x4 tiles, stride 1) against the float64 path (direct/implicit GEMM kernels), through conv2d and through
// each tiling called directly: forward with and without bias, both gradients, image sizes on the whole-vector
// paths (2x2 tiles: widths 32, 16, 8; 4x4 tiles: widths a multiple of 16) and the tile-by-tile path (other
// sizes), tiles that stick out of the image, channel counts that are not whole vectors or down to the minimum,
// odd batches, batches that leave a partial vector of tiles or split into several chunks (some in the middle of an
// image), several threads, and the cases and tilings it must not take. Channels stay at 64 or fewer here (the
// float64 reference is slow); wider layers' errors are in docs/BENCHMARKS.md.
// Error bounds: max |float32 - float64| / (1 + max |float64|) over the output, with unit normal inputs. Measured
// maxima over these cases: F(2x2, 3x3) forward/grad input 3e-7, grad weight 8e-7; F(4x4, 3x3) 4.6e-6 / 5.7e-6;
// F(4x4, 5x5) forward/grad input 7e-6, grad weight 8.4e-6 (the implicit GEMM that 5x5 used before: ~1.2e-6
// forward, ~3.6e-6 grad weight at batch 64). The bounds (2e-6, 1.5e-5 and 3e-5) leave a margin of 2.5-3.5x.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "syncgrad.h"
#include "tensor/cpu/winograd.h"

using namespace syncgrad;

namespace {

Tensor random(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, {.dtype = DType::f64}, &gen);
}

// max |got - want| / (1 + max |want|): float32 rounding of sums of `terms` products stays near 1e-7 * sqrt(terms).
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  std::vector<double> g = to_vector<double>(got), w = to_vector<double>(want);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / (1 + scale);
}

struct Case {
  int64_t batch, c_in, c_out, h, w;
};

cpu::ConvShape conv_shape(const Case& c, int64_t kernel) {
  const Conv2dParams p{1, kernel / 2};
  return {c.batch, c.c_in, c.h, c.w, c.c_out, kernel, kernel, c.h, c.w, 1, p};
}

double error_bound(int64_t kernel, int64_t tile) {
  if (kernel == 5) return 3e-5;
  return tile == 2 ? 2e-6 : 1.5e-5;
}

// The kernels' tilings of a kernel size (F(2x2, 3x3) and F(4x4, 3x3), or F(4x4, 5x5)): tile sides 2 and 4 where
// has_tiling() says so.
std::vector<int64_t> tilings(int64_t kernel) {
  std::vector<int64_t> sides;
  for (int64_t tile : {2, 4}) {
    if (cpu::winograd::has_tiling(kernel, tile)) sides.push_back(tile);
  }
  return sides;
}

// float32 results (forward with and without bias, grad input, grad weight) and their float64 references, for a
// kernel x kernel convolution with "same" padding: through conv2d (the tiling tile_side() picks) and through each
// tiling of the kernel called directly.
void check_case(const Case& c, int64_t kernel, uint64_t seed) {
  INFO(kernel << "x" << kernel << ", batch " << c.batch << ", " << c.c_in << " -> " << c.c_out << " channels, " << c.h
               << "x" << c.w);
  const cpu::ConvShape s = conv_shape(c, kernel);
  REQUIRE(cpu::winograd::supported(s));
  const int64_t pad = kernel / 2;
  Tensor x = random({c.batch, c.c_in, c.h, c.w}, seed), w = random({c.c_out, c.c_in, kernel, kernel}, seed + 1);
  Tensor b = random({c.c_out}, seed + 2), gy = random({c.batch, c.c_out, c.h, c.w}, seed + 3);
  const Conv2dParams p{1, pad};
  auto f32 = [](const Tensor& t) { return t.to(DType::f32); };
  const Tensor forward = raw::conv2d(x, w, b, 1, pad), forward_unbiased = raw::conv2d(x, w, {}, 1, pad);
  const Tensor grad_input = raw::conv2d_backward_input(gy, w, x.sizes(), p);
  const Tensor grad_weight = raw::conv2d_backward_weight(gy, x, w.sizes(), p);
  const double picked_bound = error_bound(kernel, cpu::winograd::tile_side(s));
  CHECK(relative_error(raw::conv2d(f32(x), f32(w), f32(b), 1, pad), forward) < picked_bound);
  CHECK(relative_error(raw::conv2d(f32(x), f32(w), {}, 1, pad), forward_unbiased) < picked_bound);
  CHECK(relative_error(raw::conv2d_backward_input(f32(gy), f32(w), x.sizes(), p), grad_input) < picked_bound);
  CHECK(relative_error(raw::conv2d_backward_weight(f32(gy), f32(x), w.sizes(), p), grad_weight) < picked_bound);
  const Tensor x32 = f32(x), w32 = f32(w), b32 = f32(b), gy32 = f32(gy);
  for (int64_t tile : tilings(kernel)) {
    INFO("F(" << tile << "x" << tile << ", " << kernel << "x" << kernel << ")");
    REQUIRE(cpu::winograd::supported(s, tile));
    Tensor y = empty(forward.sizes(), {.dtype = DType::f32}), gx = empty(x.sizes(), {.dtype = DType::f32});
    Tensor gw = empty(w.sizes(), {.dtype = DType::f32});
    const double bound = error_bound(kernel, tile);
    cpu::winograd::forward(x32.data_ptr<float>(), w32.data_ptr<float>(), b32.data_ptr<float>(), y.data_ptr<float>(),
                           s, tile);
    CHECK(relative_error(y, forward) < bound);
    cpu::winograd::forward(x32.data_ptr<float>(), w32.data_ptr<float>(), nullptr, y.data_ptr<float>(), s, tile);
    CHECK(relative_error(y, forward_unbiased) < bound);
    cpu::winograd::backward_input(gy32.data_ptr<float>(), w32.data_ptr<float>(), gx.data_ptr<float>(), s, tile);
    CHECK(relative_error(gx, grad_input) < bound);
    cpu::winograd::backward_weight(gy32.data_ptr<float>(), x32.data_ptr<float>(), gw.data_ptr<float>(), s, tile);
    CHECK(relative_error(gw, grad_weight) < bound);
  }
}

}  // namespace

TEST_CASE("winograd conv2d: rows of 32 pixels (16 2x2 tiles or 8 4x4 tiles side by side)") {
  for (int64_t kernel : {3, 5}) {
    check_case({2, 16, 16, 32, 32}, kernel, 1);
    check_case({3, 17, 9, 8, 32}, kernel, 9);  // channels that fill no whole vector
  }
}

TEST_CASE("winograd conv2d: other sizes (2x2 tiles in rows of 8 or 4, 4x4 tiles in runs of 4, tile by tile)") {
  for (int64_t kernel : {3, 5}) {
    check_case({4, 32, 32, 16, 16}, kernel, 11);
    check_case({5, 24, 40, 8, 8}, kernel, 15);
    check_case({7, 64, 48, 4, 4}, kernel, 19);  // 28 2x2 tiles: a partial second vector
    check_case({3, 8, 11, 2, 2}, kernel, 23);   // one tile per image (for 5x5 most taps hit padding)
    check_case({2, 9, 8, 10, 6}, kernel, 27);   // non-square
    check_case({2, 8, 8, 6, 16}, kernel, 29);   // rows of 8 tiles, vectors across images
    check_case({3, 8, 8, 6, 16}, kernel, 31);   // ... and a partial vector: tile by tile
    check_case({4, 8, 8, 6, 8}, kernel, 33);    // rows of 4 tiles across images
    check_case({4, 8, 8, 4, 16}, kernel, 35);   // 4x4 tiles: one run of 4 per image, 4 images a vector
    check_case({3, 8, 8, 4, 16}, kernel, 37);   // ... and a partial vector: tile by tile
    check_case({4, 8, 8, 12, 16}, kernel, 39);  // 12 4x4 tiles per image: vectors start inside images
  }
}

TEST_CASE("winograd conv2d: tiles that stick out of the image (odd sizes, sizes m does not divide)") {
  for (int64_t kernel : {3, 5}) {
    check_case({2, 9, 8, 7, 7}, kernel, 51);
    check_case({3, 8, 12, 15, 9}, kernel, 53);
    check_case({2, 16, 8, 1, 1}, kernel, 55);   // one pixel: a tile with a 1x1 block
    check_case({2, 8, 8, 3, 13}, kernel, 57);
    check_case({5, 12, 20, 14, 10}, kernel, 59);
  }
}

TEST_CASE("winograd conv2d: few channels (down to the minimum: 8 in and out for 3x3, 4 in and 1 out for 5x5)") {
  check_case({3, 8, 8, 8, 8}, 3, 61);
  check_case({3, 4, 1, 8, 8}, 5, 65);
  check_case({2, 4, 3, 9, 6}, 5, 67);
  check_case({2, 5, 32, 14, 14}, 5, 69);
}

TEST_CASE("winograd conv2d 5x5: the bundled CNN's second layer (14x14: 16 4x4 tiles per image, 7 of them clipped)") {
  check_case({3, 32, 64, 14, 14}, 5, 35);  // odd batch
  check_case({2, 20, 24, 14, 14}, 5, 37);  // channels not multiples of 16
}

TEST_CASE("winograd conv2d: batches split into chunks, some starting inside an image") {
  const int before = get_num_threads();
  set_num_threads(1);  // the chunk sizes below are one thread's (with more, chunks are at most a thread's share)
  check_case({33, 8, 8, 14, 14}, 5, 41);   // 16 4x4 tiles per image, chunks of 128: 8 whole images
  check_case({21, 8, 12, 14, 14}, 3, 43);  // 4x4 tiles: 16 per image, chunks of 160; 2x2: 49, chunks of 352
  check_case({9, 8, 8, 32, 32}, 3, 45);    // 4x4 tiles: 64 per image, chunks of 256; 2x2: 256, chunks of 512
  check_case({5, 8, 8, 40, 40}, 5, 47);    // 100 4x4 tiles per image, chunks of 208
  check_case({13, 8, 8, 20, 20}, 3, 49);   // 4x4 tiles: 25 per image, chunks of 256
  set_num_threads(before);
}

TEST_CASE("winograd conv2d: several intra-op threads give the one-thread results, on every tiling") {
  const int before = get_num_threads();
  for (int64_t kernel : {3, 5}) {
    for (int64_t tile : tilings(kernel)) {
      for (int64_t width : {9, 16}) {  // tile by tile; whole-vector runs
        INFO("F(" << tile << "x" << tile << ", " << kernel << "x" << kernel << "), width " << width);
        const Case c{6, 20, 12, 8, width};
        const cpu::ConvShape s = conv_shape(c, kernel);
        Tensor x = random({6, 20, 8, width}, 31).to(DType::f32);
        Tensor w = random({12, 20, kernel, kernel}, 32).to(DType::f32);
        Tensor gy = random({6, 12, 8, width}, 33).to(DType::f32);
        auto run = [&](int threads) {
          set_num_threads(threads);
          std::vector<Tensor> out{empty(gy.sizes(), {.dtype = DType::f32}), empty(x.sizes(), {.dtype = DType::f32}),
                                  empty(w.sizes(), {.dtype = DType::f32})};
          cpu::winograd::forward(x.data_ptr<float>(), w.data_ptr<float>(), nullptr, out[0].data_ptr<float>(), s,
                                 tile);
          cpu::winograd::backward_input(gy.data_ptr<float>(), w.data_ptr<float>(), out[1].data_ptr<float>(), s,
                                        tile);
          cpu::winograd::backward_weight(gy.data_ptr<float>(), x.data_ptr<float>(), out[2].data_ptr<float>(), s,
                                         tile);
          return out;
        };
        std::vector<Tensor> one = run(1), two = run(2);
        set_num_threads(before);
        // Tiles are transformed and multiplied alike however the batch is split; the weight gradient's float32
        // sums over tiles follow the split (chunks are at most a thread's share of the batch), so they may differ
        // by the tiling's rounding.
        CHECK(relative_error(two[0], one[0]) == 0);
        CHECK(relative_error(two[1], one[1]) == 0);
        CHECK(relative_error(two[2], one[2]) < error_bound(kernel, tile));
      }
    }
  }
}

TEST_CASE("winograd tilings: 4x4 tiles for 3x3 kernels on images larger than 4x4, and no tiling the kernels lack") {
  CHECK(cpu::winograd::tile_side(conv_shape({128, 16, 16, 32, 32}, 3)) == 4);
  CHECK(cpu::winograd::tile_side(conv_shape({64, 256, 256, 8, 8}, 3)) == 4);
  CHECK(cpu::winograd::tile_side(conv_shape({64, 512, 512, 4, 4}, 3)) == 2);
  CHECK(cpu::winograd::tile_side(conv_shape({64, 32, 64, 14, 14}, 5)) == 4);
  const cpu::ConvShape five = conv_shape({2, 8, 8, 8, 8}, 5), three = conv_shape({2, 8, 8, 8, 8}, 3);
  CHECK_FALSE(cpu::winograd::supported(five, 2));
  CHECK_FALSE(cpu::winograd::supported(three, 3));
  CHECK_FALSE(cpu::winograd::supported(three, 6));
  std::vector<float> x(2 * 8 * 64), w(8 * 8 * 25), y(2 * 8 * 64);
  CHECK_THROWS_WITH_AS(cpu::winograd::forward(x.data(), w.data(), nullptr, y.data(), five, 2),
                       doctest::Contains("no 2x2-tile kernel for this 5x5 convolution"), ValueError);
  CHECK_THROWS_AS(cpu::winograd::backward_weight(y.data(), x.data(), w.data(), three, 3), ValueError);
}

TEST_CASE("winograd dispatch: the CNN's conv2 takes it; its 1-channel conv1, an RGB 3x3 stem and other shapes do "
          "not") {
  CHECK(cpu::winograd::supported(conv_shape({64, 32, 64, 14, 14}, 5)));
  CHECK(cpu::winograd::supported(conv_shape({64, 4, 32, 28, 28}, 5)));
  CHECK(cpu::winograd::supported(conv_shape({64, 8, 8, 32, 32}, 3)));
  CHECK_FALSE(cpu::winograd::supported(conv_shape({64, 1, 32, 28, 28}, 5)));
  CHECK_FALSE(cpu::winograd::supported(conv_shape({64, 3, 32, 28, 28}, 5)));
  CHECK_FALSE(cpu::winograd::supported(conv_shape({64, 3, 16, 32, 32}, 3)));
  CHECK_FALSE(cpu::winograd::supported(conv_shape({64, 16, 4, 32, 32}, 3)));
  cpu::ConvShape padding_one = conv_shape({2, 8, 8, 8, 8}, 5);
  padding_one.p.padding = 1;
  padding_one.oh = padding_one.ow = 6;
  CHECK_FALSE(cpu::winograd::supported(padding_one));
  cpu::ConvShape strided = conv_shape({2, 8, 8, 8, 8}, 3);
  strided.p.stride = 2;
  strided.oh = strided.ow = 4;
  CHECK_FALSE(cpu::winograd::supported(strided));
  CHECK_FALSE(cpu::winograd::supported(conv_shape({2, 8, 8, 8, 8}, 7)));
}

TEST_CASE("conv2d float32 just outside the Winograd cases (other padding, stride 2, dilation 2, groups, few "
          "channels, 7x7) matches float64") {
  struct Outside {
    Shape input;
    int64_t kernel;
    Conv2dParams p;
  };
  for (const Outside& c : std::vector<Outside>{{{2, 8, 8, 8}, 3, {1, 0}},
                                               {{2, 8, 8, 8}, 3, {1, 2}},
                                               {{2, 8, 8, 8}, 3, {2, 1}},
                                               {{2, 8, 9, 9}, 3, {1, 2, 2}},
                                               {{2, 8, 8, 8}, 3, {1, 1, 1, 2}},
                                               {{2, 3, 8, 8}, 3, {1, 1}},
                                               {{2, 8, 8, 8}, 5, {1, 1}},
                                               {{2, 8, 8, 8}, 5, {2, 2}},
                                               {{2, 1, 8, 8}, 5, {1, 2}},
                                               {{2, 3, 8, 8}, 5, {1, 2}},
                                               {{2, 8, 8, 8}, 7, {1, 3}}}) {
    INFO(c.kernel << "x" << c.kernel << " padding " << c.p.padding.h << " stride " << c.p.stride.h << " dilation "
                  << c.p.dilation.h << " groups " << c.p.groups);
    Tensor x = random(c.input, 41), w = random({8, c.input[1] / c.p.groups, c.kernel, c.kernel}, 42);
    auto conv = [&](const Tensor& input, const Tensor& weight) {
      return raw::conv2d(input, weight, {}, c.p.stride, c.p.padding, c.p.dilation, c.p.groups);
    };
    CHECK(relative_error(conv(x.to(DType::f32), w.to(DType::f32)), conv(x, w)) < 2e-6);
  }
}
