// bfloat16 kernels against float32 computed from the same (bfloat16-rounded) operands: GEMMs in every layout
// (transposed views, offsets, odd K, N off the vector width, batches, addmm's alpha/beta), stride-1 and other
// convolutions (forward, grad input, grad weight; odd channel counts, groups, odd output widths), and the
// vectorised half-type elementwise paths (bfloat16 conversion and relu, 2x2 max pooling) bit for bit. The suite
// runs on the AVX512_BF16 dot-product kernels where the CPU has them (meson test "bf16_kernels", with
// SYNCGRAD_CPU_BF16_DOT=1), with SYNCGRAD_CPU_BF16_DOT=0 on the float32 path ("bf16_kernels_fallback": the
// operands widened to float32, the float32 GEMM and convolutions, the result rounded once), with
// SYNCGRAD_CPU_BF16_ONEDNN=1 on oneDNN's bfloat16 matmul and convolutions ("bf16_kernels_onednn"), and with the
// CPU's own choice where AMX is usable ("bf16_kernels_amx", skipped visibly elsewhere).
#include <doctest/doctest.h>

#include <Eigen/Core>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "syncgrad.h"
#include "tensor/cpu/bf16_conv_weight_gemm.h"
#include "tensor/cpu/bf16_kernels.h"
#include "tensor/cpu/cpu_features.h"
#include "tensor/cpu/onednn_conv.h"
#include "tensor/cpu/onednn_gemm.h"

using namespace syncgrad;

namespace {

Tensor bf16_randn(const Shape& shape, Generator& gen) { return randn(shape, {}, &gen).to(DType::bf16); }

// ||a - b|| / ||b||: bfloat16's rounding of the result is ~2^-9 relative per element, so about 2e-3 overall.
double relative_error(const Tensor& a, const Tensor& b) {
  Tensor d = sub(a.to(DType::f64), b.to(DType::f64));
  Tensor b64 = b.to(DType::f64);
  return std::sqrt(sum(mul(d, d)).item<double>() / std::max(1e-300, sum(mul(b64, b64)).item<double>()));
}

Tensor f32(const Tensor& t) { return t.to(DType::f32); }

constexpr double kTolerance = 5e-3;

// Random bfloat16 operands of an (m, k) @ (k, n) product in the four layouts: (a, b), (a^T view, b), (a, b^T
// view), (a^T view, b^T view), the transposed ones as views of transposed storage.
std::vector<std::pair<Tensor, Tensor>> operand_layouts(int64_t m, int64_t k, int64_t n, Generator& gen) {
  Tensor a = bf16_randn({m, k}, gen), b = bf16_randn({k, n}, gen);
  Tensor a_t = bf16_randn({k, m}, gen).t(), b_t = bf16_randn({n, k}, gen).t();
  return {{a, b}, {a_t, b}, {a, b_t}, {a_t, b_t}};
}

// Whether bfloat16 goes to oneDNN's fast kernels in this run; a visible skip message where it does not. Without
// AVX-512 (an AVX2-only CPU such as a Zen 3 EPYC) oneDNN has only reference kernels for bfloat16, which the
// library declines (its own kernels run instead), so there is nothing of oneDNN's to test.
bool bf16_goes_to_onednn() {
  if (!cpu::onednn_bf16_chosen()) {
    MESSAGE("SKIP: bfloat16 does not go to oneDNN here (no usable AMX-BF16, SYNCGRAD_CPU_BF16_ONEDNN unset or 0)");
    return false;
  }
  if (!cpu::bf16_features().avx512_core) {
    MESSAGE("SKIP: no AVX-512 (avx512f/dq/bw/vl) on this CPU, where oneDNN has only reference bfloat16 kernels");
    return false;
  }
  return true;
}

}  // namespace

// The path bfloat16 products take (bf16_kernels.h): the dot-product kernels on AVX512_BF16 CPUs that are not
// Intel's unless SYNCGRAD_CPU_BF16_DOT says 0 or 1; any other value is refused, naming it. Meson runs this with
// the variable unset ("bf16_path") and set to "2" ("bf16_path_bad_setting") besides the two suite runs.
TEST_CASE("bf16 path: chosen by the CPU unless SYNCGRAD_CPU_BF16_DOT says otherwise; other values are refused") {
  __builtin_cpu_init();
  const bool has_dot = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const char* setting = std::getenv("SYNCGRAD_CPU_BF16_DOT");
  const std::string value = setting != nullptr ? setting : "";
  if (value.empty()) {
    CHECK(cpu::bf16::dot_available() == (has_dot && !__builtin_cpu_is("intel")));
  } else if (value == "0") {
    CHECK_FALSE(cpu::bf16::dot_available());
  } else if (value == "1") {
    CHECK(cpu::bf16::dot_available() == has_dot);
  } else if (has_dot) {  // the setting is read where the build has the kernels (GCC 12 on x86-64 always does)
    const std::string named = "SYNCGRAD_CPU_BF16_DOT='" + value + "'";
    CHECK_THROWS_WITH_AS(cpu::bf16::dot_available(), doctest::Contains(named.c_str()), ValueError);
  }
}

// Where bfloat16 matmuls go to oneDNN (onednn_gemm.h): by default exactly where AMX-BF16 is usable, unless
// SYNCGRAD_CPU_BF16_ONEDNN says 0 or 1; any other value is refused, naming it.
TEST_CASE("bf16 path: oneDNN chosen where AMX is usable unless SYNCGRAD_CPU_BF16_ONEDNN says otherwise") {
  const char* setting = std::getenv("SYNCGRAD_CPU_BF16_ONEDNN");
  const std::string value = setting != nullptr ? setting : "";
  MESSAGE("AMX-BF16 usable here: " << std::string(cpu::amx_bf16_usable() ? "yes" : "no"));
  if (value.empty()) {
    CHECK(cpu::onednn_bf16_chosen() == cpu::amx_bf16_usable());
  } else if (value == "0" || value == "1") {
    CHECK(cpu::onednn_bf16_chosen() == (value == "1"));
  } else {
    const std::string named = "SYNCGRAD_CPU_BF16_ONEDNN='" + value + "'";
    CHECK_THROWS_WITH_AS(cpu::onednn_bf16_chosen(), doctest::Contains(named.c_str()), ValueError);
  }
}

// oneDNN's bfloat16 matmul itself, called directly so that a silent fall-back cannot pass for it: products from
// its threshold up in every operand layout, and the accumulating form (beta 1: addmm into a bfloat16 output).
TEST_CASE("bf16 matmul on oneDNN: layouts and accumulation match float32 on the same values") {
  if (!cpu::bf16_features().avx512_bf16) {
    MESSAGE("SKIP: no AVX512_BF16 on this CPU, where oneDNN may have no bfloat16 matmul");
    return;
  }
  Generator gen(5);
  const int shapes[][3] = {{64, 784, 256}, {512, 128, 384}, {256, 64, 784}, {257, 129, 131}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    const auto layouts = operand_layouts(m, k, n, gen);
    for (const auto& [x, y] : layouts) {
      Tensor out = empty({m, n}, {.dtype = DType::bf16});
      REQUIRE(cpu::onednn_gemm(out, x, y, Scalar(1.0), Scalar(0.0)));
      CHECK(relative_error(out, raw::mm(f32(x), f32(y))) < kTolerance);
    }
    const auto& [a, b_t] = layouts[2];
    Tensor acc = bf16_randn({m, n}, gen);
    const Tensor expected = add(f32(acc), raw::mm(f32(a), f32(b_t)));
    REQUIRE(cpu::onednn_gemm(acc, a, b_t, Scalar(1.0), Scalar(1.0)));
    CHECK(relative_error(acc, expected) < kTolerance);
  }
  Tensor small = empty({4, 4}, {.dtype = DType::bf16});
  CHECK_FALSE(cpu::onednn_gemm(small, bf16_randn({4, 4}, gen), bf16_randn({4, 4}, gen), Scalar(1.0), Scalar(0.0)));
}

TEST_CASE("bf16 matmul: every operand layout and shape matches float32 on the same values") {
  MESSAGE(std::string(cpu::onednn_bf16_chosen() ? "on oneDNN from 4M multiply-adds, else " : "")
          << std::string(cpu::bf16::dot_available() ? "on the AVX512_BF16 dot-product kernels"
                                                    : "on the float32 path (no AVX512_BF16, or not chosen)"));
  Generator gen(11);
  const int shapes[][3] = {{64, 784, 256}, {256, 64, 784}, {5, 7, 3}, {1, 9, 17}, {33, 31, 47}, {14, 800, 64},
                           {3, 2, 1}, {17, 1, 5}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    for (const auto& [x, y] : operand_layouts(m, k, n, gen)) {
      Tensor out = raw::mm(x, y);
      CHECK(out.dtype() == DType::bf16);
      CHECK(relative_error(out, raw::mm(f32(x), f32(y))) < kTolerance);
    }
  }
}

TEST_CASE("bf16 matmul: batches, broadcasting, views at odd offsets, addmm and linear") {
  Generator gen(12);
  Tensor a = bf16_randn({4, 6, 10}, gen), b = bf16_randn({4, 10, 12}, gen), w = bf16_randn({10, 12}, gen);
  CHECK(relative_error(raw::matmul(a, b), raw::matmul(f32(a), f32(b))) < kTolerance);
  CHECK(relative_error(raw::matmul(a, w), raw::matmul(f32(a), f32(w))) < kTolerance);
  CHECK(relative_error(raw::bmm(a, b), raw::bmm(f32(a), f32(b))) < kTolerance);
  Tensor big = bf16_randn({20, 20}, gen);
  Tensor x = big.narrow(1, 1, 7), y = big.narrow(0, 3, 7).narrow(1, 1, 9);  // odd element offsets
  CHECK(relative_error(raw::mm(x, y), raw::mm(f32(x), f32(y))) < kTolerance);
  Tensor bias = bf16_randn({6, 12}, gen), rows = bf16_randn({6, 10}, gen);
  CHECK(relative_error(raw::addmm(bias, rows, w, 0.5, 2.0), raw::addmm(f32(bias), f32(rows), f32(w), 0.5, 2.0)) <
        kTolerance);
  Tensor weight = bf16_randn({5, 10}, gen), lin_bias = bf16_randn({5}, gen);
  CHECK(relative_error(raw::linear(rows, weight, lin_bias), raw::linear(f32(rows), f32(weight), f32(lin_bias))) <
        kTolerance);
}

TEST_CASE("bf16 conv2d: forward and both gradients match float32 on the same values") {
  struct Case {
    int64_t n, c_in, c_out, h, w, k, stride, padding, groups, dilation = 1;
  };
  const Case cases[] = {
      {4, 32, 64, 14, 14, 5, 1, 2, 1},  // the CNN's conv2 (float32 Winograd, also under bf16)
      {4, 32, 64, 14, 15, 5, 1, 1, 1},  // its size off Winograd's padding: on the dot-product kernels
      {3, 1, 32, 28, 28, 5, 1, 2, 1},   // the CNN's conv1 (one input channel)
      {3, 3, 5, 7, 9, 3, 1, 1, 1},      // odd channel counts, odd output width
      {2, 6, 4, 5, 5, 3, 1, 0, 2},      // groups
      {2, 5, 17, 6, 7, 3, 1, 2, 1},     // C_out off the vector width
      {1, 2, 3, 4, 4, 1, 1, 0, 1},      // 1x1
      {2, 4, 6, 9, 9, 5, 1, 4, 1},      // padding beyond kernel - 1
      {2, 4, 6, 9, 9, 3, 2, 1, 1},      // stride 2 (not a dot-product kernel: converted to float32)
      {2, 16, 16, 8, 8, 3, 1, 1, 1},    // a ResNet block's 3x3 layer
      {2, 16, 32, 8, 8, 3, 2, 1, 1},    // its stride-2 layer
      {2, 16, 32, 8, 8, 1, 2, 0, 1},    // its 1x1 projection: the last window stops short of the border
      {2, 8, 12, 11, 10, 3, 2, 1, 4},   // groups with stride 2 and odd sizes
      {2, 6, 8, 11, 12, 3, 1, 2, 1, 2}, // dilation 2
  };
  Generator gen(13);
  for (const Case& c : cases) {
    CAPTURE(c.c_in);
    CAPTURE(c.c_out);
    CAPTURE(c.k);
    CAPTURE(c.stride);
    CAPTURE(c.padding);
    CAPTURE(c.groups);
    CAPTURE(c.dilation);
    Tensor x = bf16_randn({c.n, c.c_in, c.h, c.w}, gen);
    Tensor w = bf16_randn({c.c_out, c.c_in / c.groups, c.k, c.k}, gen);
    Tensor b = bf16_randn({c.c_out}, gen);
    Tensor y = raw::conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    CHECK(y.dtype() == DType::bf16);
    CHECK(relative_error(y, raw::conv2d(f32(x), f32(w), f32(b), c.stride, c.padding, c.dilation, c.groups)) <
          kTolerance);
    const Conv2dParams p{c.stride, c.padding, c.dilation, c.groups};
    Tensor gy = bf16_randn(y.sizes(), gen);
    CHECK(relative_error(raw::conv2d_backward_input(gy, w, x.sizes(), p),
                         raw::conv2d_backward_input(f32(gy), f32(w), x.sizes(), p)) < kTolerance);
    CHECK(relative_error(raw::conv2d_backward_weight(gy, x, w.sizes(), p),
                         raw::conv2d_backward_weight(f32(gy), f32(x), w.sizes(), p)) < kTolerance);
  }
}

// oneDNN's bfloat16 convolutions called directly (onednn_conv.h), where bfloat16 goes to oneDNN, so that a silent
// fall-back cannot pass for them: the CNN's and a ResNet block's layers, each pass against float32.
TEST_CASE("bf16 conv2d on oneDNN: the primitives run the bundled models' layers and match float32") {
  if (!bf16_goes_to_onednn()) return;
  struct Case {
    int64_t n, c_in, c_out, h, w, k, stride, padding;
  };
  const Case cases[] = {{4, 32, 64, 14, 14, 5, 1, 2}, {2, 16, 16, 8, 8, 3, 1, 1}, {2, 16, 32, 8, 8, 1, 2, 0}};
  Generator gen(29);
  for (const Case& c : cases) {
    CAPTURE(c.k);
    CAPTURE(c.stride);
    const Conv2dParams p{c.stride, c.padding, 1, 1};
    const int64_t oh = conv_output_size(c.h, c.k, c.stride, c.padding, 1);
    const int64_t ow = conv_output_size(c.w, c.k, c.stride, c.padding, 1);
    const cpu::ConvShape s{c.n, c.c_in, c.h, c.w, c.c_out, c.k, c.k, oh, ow, 1, p};
    Tensor x = bf16_randn({c.n, c.c_in, c.h, c.w}, gen), w = bf16_randn({c.c_out, c.c_in, c.k, c.k}, gen);
    Tensor b = bf16_randn({c.c_out}, gen), gy = bf16_randn({c.n, c.c_out, oh, ow}, gen);
    Tensor y = empty(gy.sizes(), {.dtype = DType::bf16}), gx = empty(x.sizes(), {.dtype = DType::bf16});
    Tensor gw = empty(w.sizes(), {.dtype = DType::bf16});
    REQUIRE(cpu::onednn_conv_forward(y, x, w, b, s));
    REQUIRE(cpu::onednn_conv_backward_input(gx, gy, w, s));
    REQUIRE(cpu::onednn_conv_backward_weight(gw, gy, x, s));
    CHECK(relative_error(y, raw::conv2d(f32(x), f32(w), f32(b), c.stride, c.padding)) < kTolerance);
    CHECK(relative_error(gx, raw::conv2d_backward_input(f32(gy), f32(w), x.sizes(), p)) < kTolerance);
    CHECK(relative_error(gw, raw::conv2d_backward_weight(f32(gy), f32(x), w.sizes(), p)) < kTolerance);
  }
}

// The weight gradient as column matrices on oneDNN's bfloat16 matmul (bf16_conv_weight_gemm.h), called directly:
// both ways of building the columns (whole-plane copies where the output is as wide as the input, row by row in
// blocks of 32 - (kW - 1) elsewhere), chunks of several images with a shorter last one, and the shapes it leaves.
TEST_CASE("bf16 conv2d weight gradient on the matmul: matches float32 over chunks and column layouts") {
  if (!bf16_goes_to_onednn()) return;
  struct Case {
    int64_t n, c_in, c_out, h, w, k, pad_h, pad_w;
  };
  const Case cases[] = {
      {7, 32, 64, 14, 14, 5, 2, 2},  // the CNN's conv2: 3 images per product, then 3, then 1
      {3, 16, 32, 8, 36, 3, 0, 0},   // output 6 x 34: rows of two blocks, narrower than the input
      {2, 8, 48, 9, 7, 3, 1, 2},     // output 9 x 9, wider than the input
      {5, 64, 64, 8, 8, 3, 1, 1},    // a ResNet-20 layer
  };
  Generator gen(31);
  for (const Case& c : cases) {
    CAPTURE(c.c_in);
    CAPTURE(c.w);
    const Conv2dParams p{1, Size2(c.pad_h, c.pad_w), 1, 1};
    const int64_t oh = conv_output_size(c.h, c.k, 1, c.pad_h, 1), ow = conv_output_size(c.w, c.k, 1, c.pad_w, 1);
    const cpu::ConvShape s{c.n, c.c_in, c.h, c.w, c.c_out, c.k, c.k, oh, ow, 1, p};
    REQUIRE(cpu::bf16_conv_weight_gemm_supported(s));
    Tensor x = bf16_randn({c.n, c.c_in, c.h, c.w}, gen), gy = bf16_randn({c.n, c.c_out, oh, ow}, gen);
    Tensor gw = empty({c.c_out, c.c_in, c.k, c.k}, {.dtype = DType::bf16});
    REQUIRE(cpu::bf16_conv_weight_gemm(gw, gy, x, s));
    CHECK(relative_error(gw, raw::conv2d_backward_weight(f32(gy), f32(x), gw.sizes(), p)) < kTolerance);
  }
  const Conv2dParams same{1, 1, 1, 1};
  CHECK_FALSE(cpu::bf16_conv_weight_gemm_supported({2, 16, 16, 16, 16, 3, 3, 16, 16, 1, same}));  // 16 outputs
  CHECK_FALSE(cpu::bf16_conv_weight_gemm_supported({2, 64, 32, 32, 64, 3, 3, 32, 32, 1, same}));  // a 32x32 plane
  CHECK_FALSE(cpu::bf16_conv_weight_gemm_supported({2, 8, 8, 8, 32, 3, 3, 4, 4, 1, {2, 1, 1, 1}}));  // stride 2
}

TEST_CASE("bf16 conv2d: an inf in the input spreads only to the outputs whose fields hold it") {
  Tensor x = zeros({1, 2, 6, 7}, {.dtype = DType::bf16});
  raw::fill_(x.narrow(2, 0, 1).narrow(3, 0, 1), std::numeric_limits<float>::infinity());  // x[., ., 0, 0]
  Tensor w = ones({3, 2, 3, 3}, {.dtype = DType::bf16});
  Tensor y = raw::conv2d(x, w, Tensor(), 1, 1).to(DType::f32);
  // With padding 1, input (0, 0) is in the fields of outputs (0..1, 0..1) only.
  const std::vector<float> v = to_vector<float>(y);
  int non_finite = 0;
  for (float f : v) non_finite += std::isfinite(f) ? 0 : 1;
  CHECK(non_finite == 3 * 4);
  // Grad weight over an odd output width reads a padding column: still finite where the data is.
  Tensor gy = ones({1, 3, 6, 7}, {.dtype = DType::bf16});
  Tensor finite_x = ones({1, 2, 6, 7}, {.dtype = DType::bf16});
  Tensor gw = raw::conv2d_backward_weight(gy, finite_x, w.sizes(), {1, 1, 1, 1}).to(DType::f32);
  for (float f : to_vector<float>(gw)) CHECK(std::isfinite(f));
}

TEST_CASE("bf16 elementwise fast paths: conversions, relu and 2x2 max pooling are exact") {
  Generator gen(14);
  Tensor x = randn({2, 3, 8, 10}, {}, &gen);
  raw::fill_(x.narrow(3, 0, 1), std::numeric_limits<float>::quiet_NaN());
  raw::fill_(x.narrow(3, 1, 1), -std::numeric_limits<float>::infinity());
  Tensor h = x.to(DType::bf16);
  // float -> bfloat16 rounds to nearest even, NaN becomes the quiet NaN 0x7fc0 / 0xffc0 (Eigen's conversion).
  const auto* bits = static_cast<const uint16_t*>(h.data_ptr());
  const std::vector<float> xs = to_vector<float>(x);
  for (size_t i = 0; i < xs.size(); ++i) {
    CHECK(bits[i] == Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(xs[i])));
  }
  Tensor finite = h.narrow(3, 1, 9);  // without the NaN column (NaN != NaN)
  CHECK(to_vector<float>(relu(finite).to(DType::f32)) == to_vector<float>(relu(finite.to(DType::f32))));
  // relu and its gradient on the bits: -0 and NaN kept, -inf and negative subnormals to 0; the gradient passes
  // where the output is above 0 (+inf included, NaN not).
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor special = from_vector(std::vector<float>{-0.0f, 0.0f, -inf, inf, nan, -nan, -1e-39f, 1e-39f, -2.5f, 3.0f},
                               {10}).to(DType::bf16);
  const std::vector<float> r = to_vector<float>(raw::unary(UnaryOp::relu, special).to(DType::f32));
  CHECK((r[0] == 0.0f && std::signbit(r[0])));
  CHECK((r[1] == 0.0f && !std::signbit(r[1])));
  CHECK(r[2] == 0.0f);
  CHECK(r[3] == inf);
  CHECK((std::isnan(r[4]) && std::isnan(r[5])));
  CHECK((r[6] == 0.0f && !std::signbit(r[6])));
  CHECK(r[7] > 0.0f);
  CHECK(r[8] == 0.0f);
  CHECK(r[9] == 3.0f);
  Tensor g = full({10}, 2.0, {.dtype = DType::bf16});
  CHECK(to_vector<float>(raw::unary_backward(UnaryOp::relu, g, special).to(DType::f32)) ==
        std::vector<float>{0, 0, 0, 2, 0, 0, 0, 2, 0, 2});
  for (DType half_type : {DType::bf16, DType::f16}) {
    CAPTURE(dtype_name(half_type));
    Tensor planes = finite.narrow(3, 1, 8).to(DType::f32).to(half_type).contiguous();
    auto [values, indices] = max_pool2d_with_indices(planes, 2);
    auto [values32, indices32] = max_pool2d_with_indices(planes.to(DType::f32), 2);
    CHECK(to_vector<float>(values.to(DType::f32)) == to_vector<float>(values32));
    CHECK(to_vector<int64_t>(indices) == to_vector<int64_t>(indices32));
    Tensor grad = ones_like(values);
    Tensor grad_input = raw::max_pool2d_backward(grad, indices, planes.sizes());
    CHECK(to_vector<float>(grad_input.to(DType::f32)) ==
          to_vector<float>(raw::max_pool2d_backward(grad.to(DType::f32), indices32, planes.sizes())));
  }
}
