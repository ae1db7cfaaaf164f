// The Winograd conv2d kernels (tensor/cpu/winograd.h: float32, 3x3, stride 1, padding 1, even sizes) against
// the float64 path (direct/implicit GEMM kernels): forward with and without bias, both gradients, image sizes
// on the contiguous (width 32) and gathered (other widths) tile paths, channel counts that are not whole
// vectors, batches that leave a partial vector of tiles, several threads, and the cases it must not take.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "syncgrad.h"

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

// float32 results (forward with bias, grad input, grad weight) and their float64 references.
void check_case(const Case& c, uint64_t seed) {
  INFO("batch " << c.batch << ", " << c.c_in << " -> " << c.c_out << " channels, " << c.h << "x" << c.w);
  Tensor x = random({c.batch, c.c_in, c.h, c.w}, seed), w = random({c.c_out, c.c_in, 3, 3}, seed + 1);
  Tensor b = random({c.c_out}, seed + 2), gy = random({c.batch, c.c_out, c.h, c.w}, seed + 3);
  const Conv2dParams p{1, 1};
  auto f32 = [](const Tensor& t) { return t.to(DType::f32); };
  CHECK(relative_error(raw::conv2d(f32(x), f32(w), f32(b), 1, 1), raw::conv2d(x, w, b, 1, 1)) < 2e-6);
  CHECK(relative_error(raw::conv2d(f32(x), f32(w), {}, 1, 1), raw::conv2d(x, w, {}, 1, 1)) < 2e-6);
  CHECK(relative_error(raw::conv2d_backward_input(f32(gy), f32(w), x.sizes(), p),
                       raw::conv2d_backward_input(gy, w, x.sizes(), p)) < 2e-6);
  CHECK(relative_error(raw::conv2d_backward_weight(f32(gy), f32(x), w.sizes(), p),
                       raw::conv2d_backward_weight(gy, x, w.sizes(), p)) < 2e-6);
}

}  // namespace

TEST_CASE("winograd conv2d: rows of 32 pixels (16 tiles side by side)") {
  check_case({2, 16, 16, 32, 32}, 1);
  check_case({3, 17, 9, 8, 32}, 9);     // channels that fill no whole vector
}

TEST_CASE("winograd conv2d: other even sizes go through gathered tiles") {
  check_case({4, 32, 32, 16, 16}, 11);
  check_case({5, 24, 40, 8, 8}, 15);
  check_case({7, 64, 48, 4, 4}, 19);    // 28 tiles: a partial second vector
  check_case({3, 8, 11, 2, 2}, 23);     // one tile per image
  check_case({2, 9, 8, 10, 6}, 27);     // non-square
  check_case({2, 8, 8, 6, 16}, 29);     // rows of 8 tiles, vectors across images
  check_case({3, 8, 8, 6, 16}, 31);     // ... and a partial vector: tile by tile
  check_case({4, 8, 8, 6, 8}, 33);      // rows of 4 tiles across images
}

TEST_CASE("winograd conv2d: several intra-op threads give the one-thread results") {
  const int before = get_num_threads();
  Tensor x = random({6, 20, 8, 8}, 31).to(DType::f32), w = random({12, 20, 3, 3}, 32).to(DType::f32);
  Tensor gy = random({6, 12, 8, 8}, 33).to(DType::f32);
  const Conv2dParams p{1, 1};
  auto run = [&](int threads) {
    set_num_threads(threads);
    return std::vector<Tensor>{raw::conv2d(x, w, {}, 1, 1), raw::conv2d_backward_input(gy, w, x.sizes(), p),
                               raw::conv2d_backward_weight(gy, x, w.sizes(), p)};
  };
  std::vector<Tensor> one = run(1), two = run(2);
  set_num_threads(before);
  for (size_t i = 0; i < one.size(); ++i) CHECK(relative_error(two[i], one[i]) < 1e-6);
}

TEST_CASE("conv2d float32 just outside the Winograd cases (odd size, padding 0 or 2, stride 2, 3 channels) matches "
          "float64") {
  for (const auto& [shape, padding, stride] : std::vector<std::tuple<Shape, int64_t, int64_t>>{
           {{2, 8, 7, 7}, 1, 1},
           {{2, 8, 8, 8}, 0, 1},
           {{2, 8, 8, 8}, 2, 1},
           {{2, 8, 8, 8}, 1, 2},
           {{2, 3, 8, 8}, 1, 1}}) {
    Tensor x = random(shape, 41), w = random({9, shape[1], 3, 3}, 42);
    CHECK(relative_error(raw::conv2d(x.to(DType::f32), w.to(DType::f32), {}, stride, padding),
                         raw::conv2d(x, w, {}, stride, padding)) < 2e-6);
  }
}
