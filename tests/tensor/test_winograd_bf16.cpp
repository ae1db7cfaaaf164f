// The Winograd conv2d kernels with bfloat16 activations (tensor/cpu/winograd.h; what conv2d runs for bfloat16
// convolutions that float32 runs with Winograd, as under autocast): bit for bit the float32 kernels on the
// converted operands with the results rounded to bfloat16, for the forward pass (with and without bias) and both
// gradients, through conv2d (where it runs them: not where bfloat16 goes to oneDNN) and through each tiling
// called directly; on image sizes of the whole-vector and the
// tile-by-tile paths, tiles that stick out of the image, and batches split across threads into chunks that start
// inside an image or inside a row of tiles (their outputs are rounded block by block: a chunk must not touch its
// neighbours' pixels).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "syncgrad.h"
#include "tensor/cpu/onednn_gemm.h"
#include "tensor/cpu/winograd.h"

using namespace syncgrad;

namespace {

using cpu::winograd::BF16;

Tensor random_bf16(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, {.dtype = DType::f32}, &gen).to(DType::bf16);
}

// How many elements of two bfloat16 tensors of one shape differ (bit patterns; NaN never arises here).
int64_t differences(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == DType::bf16);
  REQUIRE(got.sizes() == want.sizes());
  const std::vector<double> g = to_vector<double>(got), w = to_vector<double>(want);
  int64_t count = 0;
  for (size_t i = 0; i < g.size(); ++i) count += g[i] != w[i];
  return count;
}

// max |got - want| / max |want|, for float32 or bfloat16 tensors.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  const std::vector<double> g = to_vector<double>(got), w = to_vector<double>(want);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return diff / scale;
}

BF16* elements(const Tensor& t) { return static_cast<BF16*>(t.data_ptr()); }

Tensor f32(const Tensor& t) { return t.to(DType::f32); }
Tensor bf16(const Tensor& t) { return t.to(DType::bf16); }

struct Case {
  int64_t batch, c_in, c_out, h, w;
  int threads;
};

void check_case(const Case& c, int64_t kernel, uint64_t seed) {
  INFO(kernel << "x" << kernel << ", batch " << c.batch << ", " << c.c_in << " -> " << c.c_out << " channels, " << c.h
               << "x" << c.w << ", " << c.threads << " thread(s)");
  const int before = get_num_threads();
  set_num_threads(c.threads);
  const int64_t pad = kernel / 2;
  const Conv2dParams p{1, pad};
  const cpu::ConvShape s{c.batch, c.c_in, c.h, c.w, c.c_out, kernel, kernel, c.h, c.w, 1, p};
  REQUIRE(cpu::winograd::supported(s));
  const Tensor x = random_bf16({c.batch, c.c_in, c.h, c.w}, seed), w = random_bf16({c.c_out, c.c_in, kernel, kernel},
                                                                                   seed + 1);
  const Tensor b = random_bf16({c.c_out}, seed + 2), gy = random_bf16({c.batch, c.c_out, c.h, c.w}, seed + 3);
  // Through the conv ops, where they run these kernels: where bfloat16 goes to oneDNN (an AMX CPU) they run
  // oneDNN's convolutions instead (test_bf16_kernels.cpp), and only the direct calls below reach Winograd.
  if (!cpu::onednn_bf16_chosen()) {
    CHECK(differences(raw::conv2d(x, w, b, 1, pad), bf16(raw::conv2d(f32(x), f32(w), f32(b), 1, pad))) == 0);
    CHECK(differences(raw::conv2d(x, w, {}, 1, pad), bf16(raw::conv2d(f32(x), f32(w), {}, 1, pad))) == 0);
    CHECK(differences(raw::conv2d_backward_input(gy, w, x.sizes(), p),
                      bf16(raw::conv2d_backward_input(f32(gy), f32(w), x.sizes(), p))) == 0);
    // With several threads the weight gradient's per-thread sums are added in the order the threads finish, so two
    // calls may differ by float32 rounding, and the rounded results by one bfloat16 step (2^-8 relative).
    const Tensor grad_weight = raw::conv2d_backward_weight(gy, x, w.sizes(), p);
    const Tensor grad_weight_reference = bf16(raw::conv2d_backward_weight(f32(gy), f32(x), w.sizes(), p));
    if (c.threads == 1) {
      CHECK(differences(grad_weight, grad_weight_reference) == 0);
    } else {
      CHECK(relative_error(grad_weight, grad_weight_reference) <= 1.0 / 256);
    }
  }
  const Tensor x32 = f32(x), w32 = f32(w), b32 = f32(b), gy32 = f32(gy);
  for (int64_t tile : {2, 4}) {
    if (!cpu::winograd::has_tiling(kernel, tile)) continue;
    INFO("F(" << tile << "x" << tile << ", " << kernel << "x" << kernel << ")");
    const Tensor y = empty(gy.sizes(), {.dtype = DType::bf16}), y32 = empty(gy.sizes(), {.dtype = DType::f32});
    cpu::winograd::forward(elements(x), w32.data_ptr<float>(), b32.data_ptr<float>(), elements(y), s,
                           tile);
    cpu::winograd::forward(x32.data_ptr<float>(), w32.data_ptr<float>(), b32.data_ptr<float>(), y32.data_ptr<float>(),
                           s, tile);
    CHECK(differences(y, bf16(y32)) == 0);
    const Tensor gx = empty(x.sizes(), {.dtype = DType::bf16}), gx32 = empty(x.sizes(), {.dtype = DType::f32});
    cpu::winograd::backward_input(elements(gy), w32.data_ptr<float>(), elements(gx), s, tile);
    cpu::winograd::backward_input(gy32.data_ptr<float>(), w32.data_ptr<float>(), gx32.data_ptr<float>(), s, tile);
    CHECK(differences(gx, bf16(gx32)) == 0);
    const Tensor gw = empty(w.sizes(), {.dtype = DType::f32}), gw32 = empty(w.sizes(), {.dtype = DType::f32});
    cpu::winograd::backward_weight(elements(gy), elements(x), gw.data_ptr<float>(), s, tile);
    cpu::winograd::backward_weight(gy32.data_ptr<float>(), x32.data_ptr<float>(), gw32.data_ptr<float>(), s, tile);
    if (c.threads == 1) {
      CHECK(to_vector<float>(gw) == to_vector<float>(gw32));
    } else {
      CHECK(relative_error(gw, gw32) < 1e-5);
    }
  }
  set_num_threads(before);
}

}  // namespace

TEST_CASE("winograd conv2d, bfloat16 activations: whole-vector rows and tile by tile") {
  for (int64_t kernel : {3, 5}) {
    check_case({2, 16, 16, 32, 32, 1}, kernel, 1);  // ResNet-20's first stage
    check_case({3, 17, 9, 8, 32, 1}, kernel, 5);    // channels that fill no whole vector
    check_case({4, 32, 32, 16, 16, 1}, kernel, 9);
    check_case({7, 64, 48, 4, 4, 1}, kernel, 13);   // a partial second vector of 2x2 tiles
    check_case({3, 32, 64, 14, 14, 1}, kernel, 17); // the CNN's second layer: 4x4 tiles clipped at the edge
  }
}

TEST_CASE("winograd conv2d, bfloat16 activations: tiles that stick out of the image") {
  for (int64_t kernel : {3, 5}) {
    check_case({2, 9, 8, 7, 7, 1}, kernel, 21);
    check_case({3, 8, 12, 15, 9, 1}, kernel, 25);
    check_case({2, 16, 8, 1, 1, 1}, kernel, 29);
  }
}

TEST_CASE("winograd conv2d, bfloat16 activations: chunks split across threads inside images and rows of tiles") {
  for (int64_t kernel : {3, 5}) {
    check_case({1, 8, 8, 28, 20, 2}, kernel, 31);  // 4x4 tiles: 35, chunks of 32: the second starts in row 6
    check_case({1, 8, 8, 28, 20, 3}, kernel, 35);
    check_case({3, 8, 16, 30, 26, 2}, kernel, 39);
    check_case({5, 16, 16, 32, 32, 2}, kernel, 43);
  }
}
