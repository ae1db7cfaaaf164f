// conv2d and 2-D pooling: values against direct (naive) loops in double, every floating dtype, non-contiguous
// operands, the backward pieces (adjoint identities, hand-computed routes), threads, and each argument error.
#include <doctest/doctest.h>

#include "tests/check_error.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

Tensor random(const Shape& shape, uint64_t seed, DType dtype = DType::f64) {
  Generator gen(seed);
  return randn(shape, {.dtype = dtype}, &gen);
}

double dot(const Tensor& a, const Tensor& b) {
  std::vector<double> x = to_vector<double>(a), y = to_vector<double>(b);
  REQUIRE(x.size() == y.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

void check_close(const Tensor& got, const Shape& shape, const std::vector<double>& want, double tol) {
  REQUIRE(got.sizes() == shape);
  std::vector<double> g = to_vector<double>(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK_MESSAGE(std::isnan(g[i]), "element " << i);
    } else if (std::abs(g[i] - want[i]) > tol * (1 + std::abs(want[i]))) {
      FAIL_CHECK("element " << i << ": got " << g[i] << ", want " << want[i]);
      return;
    }
  }
}


struct ConvCase {
  Shape input;   // (N, C_in, H, W)
  Shape weight;  // (C_out, C_in / groups, kH, kW)
  Size2 stride = 1, padding = 0, dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

// Direct convolution in double: out[n, co, oy, ox] = b[co] + sum w[co, ci, ki, kj] * x[n, g * Cg + ci, iy, ix].
std::vector<double> naive_conv2d(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                                 const std::vector<double>& b, Shape& out_shape) {
  const int64_t n_ = c.input[0], cin = c.input[1], h = c.input[2], wd = c.input[3];
  const int64_t cout = c.weight[0], cg = c.weight[1], kh = c.weight[2], kw = c.weight[3];
  const int64_t oh = (h + 2 * c.padding.h - c.dilation.h * (kh - 1) - 1) / c.stride.h + 1;
  const int64_t ow = (wd + 2 * c.padding.w - c.dilation.w * (kw - 1) - 1) / c.stride.w + 1;
  out_shape = {n_, cout, oh, ow};
  const int64_t cout_g = cout / c.groups;
  std::vector<double> out;
  for (int64_t n = 0; n < n_; ++n) {
    for (int64_t co = 0; co < cout; ++co) {
      const int64_t g = co / cout_g;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = c.bias ? b[co] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t ki = 0; ki < kh; ++ki) {
              for (int64_t kj = 0; kj < kw; ++kj) {
                const int64_t iy = oy * c.stride.h - c.padding.h + ki * c.dilation.h;
                const int64_t ix = ox * c.stride.w - c.padding.w + kj * c.dilation.w;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += w[((co * cg + ci) * kh + ki) * kw + kj] * x[((n * cin + g * cg + ci) * h + iy) * wd + ix];
              }
            }
          }
          out.push_back(acc);
        }
      }
    }
  }
  return out;
}

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 6}, {4, 3, 3, 3}},
    {{2, 3, 7, 6}, {4, 3, 3, 3}, 2, 1, 1, 1, false},
    {{1, 2, 8, 7}, {3, 2, 3, 2}, {2, 1}, {2, 0}, {1, 2}},
    {{2, 2, 9, 9}, {2, 2, 3, 3}, 1, 2, 2},
    {{2, 4, 9, 8}, {6, 2, 3, 3}, 2, 1, 2, 2},
    {{2, 4, 6, 6}, {8, 1, 3, 3}, 1, 1, 1, 4},          // depthwise
    {{2, 4, 5, 3}, {6, 2, 1, 1}, 1, 0, 1, 2},          // 1x1: the input is the column matrix
    {{2, 3, 5, 5}, {2, 3, 1, 1}, 2, 0, 1, 1, false},   // 1x1 with stride
    {{1, 2, 4, 3}, {3, 2, 6, 5}, 1, 1, 1, 1},          // kernel = padded input: a 1x1 output
    {{3, 1, 28, 28}, {4, 1, 5, 5}, 1, 2},              // the reference CNN's first layer, smaller
};

}  // namespace

TEST_CASE("conv2d matches a direct convolution over stride, padding, dilation and groups") {
  for (DType dtype : {DType::f64, DType::f32}) {
    for (size_t i = 0; i < kConvCases.size(); ++i) {
      const ConvCase& c = kConvCases[i];
      INFO("case " << i << " dtype " << dtype_name(dtype));
      Tensor x = random(c.input, 10 + i, dtype), w = random(c.weight, 20 + i, dtype);
      Tensor b = c.bias ? random({c.weight[0]}, 30 + i, dtype) : Tensor();
      Shape out_shape;
      std::vector<double> want = naive_conv2d(c, to_vector<double>(x), to_vector<double>(w),
                                              c.bias ? to_vector<double>(b) : std::vector<double>{}, out_shape);
      Tensor y = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      CHECK(y.dtype() == dtype);
      check_close(y, out_shape, want, dtype == DType::f64 ? 1e-12 : 1e-5);
    }
  }
}

TEST_CASE("conv2d output size follows PyTorch's formula") {
  Tensor x = zeros({1, 1, 10, 9});
  CHECK(conv2d(x, zeros({1, 1, 3, 3})).sizes() == Shape{1, 1, 8, 7});
  CHECK(conv2d(x, zeros({1, 1, 3, 3}), {}, 2).sizes() == Shape{1, 1, 4, 4});        // floor(7/2)+1, floor(6/2)+1
  CHECK(conv2d(x, zeros({1, 1, 3, 3}), {}, 3, 1).sizes() == Shape{1, 1, 4, 3});     // floor(9/3)+1, floor(8/3)+1
  CHECK(conv2d(x, zeros({2, 1, 3, 2}), {}, 1, {1, 0}, {2, 3}).sizes() == Shape{1, 2, 8, 6});
}

TEST_CASE("conv2d accepts non-contiguous input, weight and bias") {
  const ConvCase c{{2, 4, 6, 5}, {6, 2, 3, 3}, 1, 1, 1, 2};
  Tensor x = random({2, 6, 5, 4}, 1).permute({0, 3, 1, 2});  // (N, C, H, W) view of an NHWC tensor
  Tensor w = random({3, 3, 2, 6}, 2).permute({3, 2, 0, 1});  // (C_out, C_in/g, kH, kW) view
  Tensor b = raw::slice(random({12}, 3), 0, 0, 12, 2);       // strided (6)
  REQUIRE_FALSE(x.is_contiguous());
  REQUIRE_FALSE(w.is_contiguous());
  REQUIRE_FALSE(b.is_contiguous());
  Shape out_shape;
  std::vector<double> want =
      naive_conv2d(c, to_vector<double>(x), to_vector<double>(w), to_vector<double>(b), out_shape);
  check_close(conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups), out_shape, want, 1e-12);
}

TEST_CASE("conv2d in float16 and bfloat16 computes in float32 and rounds once") {
  for (DType half : {DType::f16, DType::bf16}) {
    INFO(dtype_name(half));
    Tensor x = random({2, 4, 6, 6}, 4, DType::f32).to(half), w = random({4, 2, 3, 3}, 5, DType::f32).to(half);
    Tensor b = random({4}, 6, DType::f32).to(half);
    Tensor y = conv2d(x, w, b, 1, 1, 1, 2);
    CHECK(y.dtype() == half);
    Tensor ref = conv2d(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32), 1, 1, 1, 2).to(half);
    check_close(y, ref.sizes(), to_vector<double>(ref), 0.0);
    Tensor gy = random(y.sizes(), 7, DType::f32).to(half);
    const Conv2dParams p{1, 1, 1, 2};
    Tensor gx = raw::conv2d_backward_input(gy, w, x.sizes(), p);
    Tensor gx_ref = raw::conv2d_backward_input(gy.to(DType::f32), w.to(DType::f32), x.sizes(), p).to(half);
    CHECK(gx.dtype() == half);
    check_close(gx, x.sizes(), to_vector<double>(gx_ref), 0.0);
    Tensor gw = raw::conv2d_backward_weight(gy, x, w.sizes(), p);
    Tensor gw_ref = raw::conv2d_backward_weight(gy.to(DType::f32), x.to(DType::f32), w.sizes(), p).to(half);
    check_close(gw, w.sizes(), to_vector<double>(gw_ref), 0.0);
  }
}

TEST_CASE("conv2d backward pieces are the adjoints of the forward") {
  // For the bilinear y = conv(x, w): <conv(x, w), gy> = <x, grad_input(gy)> = <w, grad_weight(gy)>.
  for (DType dtype : {DType::f64, DType::f32}) {
    for (size_t i = 0; i < kConvCases.size(); ++i) {
      const ConvCase& c = kConvCases[i];
      INFO("case " << i << " dtype " << dtype_name(dtype));
      Tensor x = random(c.input, 40 + i, dtype), w = random(c.weight, 50 + i, dtype);
      Tensor y = conv2d(x, w, {}, c.stride, c.padding, c.dilation, c.groups);
      Tensor gy = random(y.sizes(), 60 + i, dtype);
      const Conv2dParams p{c.stride, c.padding, c.dilation, c.groups};
      Tensor gx = raw::conv2d_backward_input(gy, w, x.sizes(), p);
      Tensor gw = raw::conv2d_backward_weight(gy, x, w.sizes(), p);
      CHECK(gx.sizes() == x.sizes());
      CHECK(gw.sizes() == w.sizes());
      const double tol = dtype == DType::f64 ? 1e-10 : 1e-3;
      const double forward = dot(y, gy);
      CHECK(dot(x, gx) == doctest::Approx(forward).epsilon(tol));
      CHECK(dot(w, gw) == doctest::Approx(forward).epsilon(tol));
    }
  }
}

TEST_CASE("conv2d autograd: gradients of input, weight and bias") {
  Tensor x = random({2, 4, 5, 5}, 70), w = random({6, 2, 3, 3}, 71), b = random({6}, 72);
  x.requires_grad_(true);
  w.requires_grad_(true);
  b.requires_grad_(true);
  Tensor y = conv2d(x, w, b, 2, 1, 1, 2);
  Tensor gy = random(y.sizes(), 73);
  y.backward(gy);
  const Conv2dParams p{2, 1, 1, 2};
  check_close(x.grad(), x.sizes(), to_vector<double>(raw::conv2d_backward_input(gy, w, x.sizes(), p)), 1e-12);
  check_close(w.grad(), w.sizes(), to_vector<double>(raw::conv2d_backward_weight(gy, x, w.sizes(), p)), 1e-12);
  // grad_bias[co] = sum of gy over n, oy, ox.
  std::vector<double> g = to_vector<double>(gy), want_bias(6, 0.0);
  const int64_t plane = y.sizes()[2] * y.sizes()[3];
  for (size_t i = 0; i < g.size(); ++i) want_bias[(i / plane) % 6] += g[i];
  check_close(b.grad(), {6}, want_bias, 1e-12);
}

TEST_CASE("conv2d autograd: only the operands that require grad get one") {
  Tensor x = random({1, 2, 4, 4}, 80), w = random({3, 2, 3, 3}, 81);
  w.requires_grad_(true);
  Tensor y = conv2d(x, w, {}, 1, 1);
  y.sum().backward();
  CHECK_FALSE(x.grad().defined());
  REQUIRE(w.grad().defined());
  check_close(w.grad(), w.sizes(),
              to_vector<double>(raw::conv2d_backward_weight(ones_like(y), x, w.sizes(), Conv2dParams{1, 1})), 1e-12);
}

TEST_CASE("conv2d with several intra-op threads gives the one-thread results") {
  const int before = get_num_threads();
  Tensor x = random({5, 4, 9, 8}, 90, DType::f32), w = random({6, 2, 3, 3}, 91, DType::f32);
  Tensor b = random({6}, 92, DType::f32);
  const Conv2dParams p{1, 1, 1, 2};
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor y = raw::conv2d(x, w, b, p.stride, p.padding, p.dilation, p.groups);
    Tensor gx = raw::conv2d_backward_input(y, w, x.sizes(), p);
    Tensor gw = raw::conv2d_backward_weight(y, x, w.sizes(), p);
    return std::vector<Tensor>{y, gx, gw};
  };
  std::vector<Tensor> one = run(1), two = run(2);
  set_num_threads(before);
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("result " << i);
    check_close(two[i], one[i].sizes(), to_vector<double>(one[i]), 1e-5);
  }
}

namespace {

// The float32 forward (x, w, optional bias b) and both gradients (of a random output gradient) under params p
// agree with the float64 ones on the same values, to `tol` relative.
void check_float32_against_float64(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                                   double tol) {
  const Tensor b64 = b.defined() ? b.to(DType::f64) : Tensor();
  const Tensor y = raw::conv2d(x, w, b, p.stride, p.padding, p.dilation, p.groups);
  const Tensor y64 =
      raw::conv2d(x.to(DType::f64), w.to(DType::f64), b64, p.stride, p.padding, p.dilation, p.groups);
  check_close(y, y64.sizes(), to_vector<double>(y64), tol);
  const Tensor gy = random(y.sizes(), 103, DType::f32);
  const Tensor gx64 = raw::conv2d_backward_input(gy.to(DType::f64), w.to(DType::f64), x.sizes(), p);
  const Tensor gw64 = raw::conv2d_backward_weight(gy.to(DType::f64), x.to(DType::f64), w.sizes(), p);
  check_close(raw::conv2d_backward_input(gy, w, x.sizes(), p), x.sizes(), to_vector<double>(gx64), tol);
  check_close(raw::conv2d_backward_weight(gy, x, w.sizes(), p), w.sizes(), to_vector<double>(gw64), tol);
}

}  // namespace

// float32 convolutions off the Winograd/implicit paths with large products multiply on oneDNN over chunks of
// images (tensor/cpu/conv.cpp), the others and float64 on the register tiles. At ResNet-18's stride-2 and
// 1x1-projection shapes and one that spans two chunks (9 images, 7 to a chunk), on 1 and 2 threads, float32
// forward and both gradients agree with float64 on the same values.
TEST_CASE("conv2d float32 at ResNet's stride-2 and projection shapes matches float64") {
  const int before = get_num_threads();
  struct Case {
    Shape input, weight;
    int64_t padding;
  };
  const Case cases[] = {{{3, 64, 16, 16}, {128, 64, 3, 3}, 1}, {{2, 128, 8, 8}, {256, 128, 1, 1}, 0},
                        {{2, 32, 9, 9}, {48, 32, 3, 3}, 1}, {{9, 96, 15, 15}, {160, 96, 3, 3}, 1}};
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Case& c : cases) {
      INFO("threads " << threads << " weight " << c.weight[0] << "x" << c.weight[1] << "x" << c.weight[2]);
      check_float32_against_float64(random(c.input, 100, DType::f32), random(c.weight, 101, DType::f32),
                                    random({c.weight[0]}, 102, DType::f32), {2, c.padding, 1, 1}, 1e-4);
    }
  }
  set_num_threads(before);
}

// Horizontal stride 2 gathers and scatters its rows 16 outputs at a time (tensor/cpu/stride2_rows.h), masking
// what falls outside the input row: widths below, at and past a vector, paddings 0-2, dilation 1 and 2, and a
// (1, 2) stride; float32 forward and both gradients agree with float64.
TEST_CASE("conv2d float32 with horizontal stride 2 at widths around a vector matches float64") {
  struct Case {
    int64_t width, padding, dilation, stride_h;
  };
  const Case cases[] = {{7, 1, 1, 2},  {16, 0, 1, 2}, {17, 1, 1, 2}, {33, 2, 1, 2},
                        {40, 1, 2, 2}, {35, 1, 1, 1}, {64, 1, 1, 2}};
  for (const Case& c : cases) {
    INFO("width " << c.width << " padding " << c.padding << " dilation " << c.dilation << " stride_h " << c.stride_h);
    check_float32_against_float64(random({2, 3, 9, c.width}, 110, DType::f32), random({4, 3, 3, 3}, 111, DType::f32),
                                  Tensor(), {{c.stride_h, 2}, c.padding, c.dilation, 1}, 1e-5);
  }
}

TEST_CASE("conv2d argument errors name the op and the values") {
  Tensor x = zeros({2, 3, 5, 5}), w = zeros({4, 3, 3, 3});
  check_error<ShapeError>([&] { conv2d(zeros({3, 5, 5}), w); }, {"conv2d", "4-D input", "[3, 5, 5]", "unsqueeze"});
  check_error<ShapeError>([&] { conv2d(x, zeros({4, 3, 3})); }, {"conv2d", "4-D weight", "[4, 3, 3]"});
  check_error<ShapeError>([&] { conv2d(x, zeros({4, 2, 3, 3})); },
                          {"conv2d", "C_in=3", "[4, 2, 3, 3]", "groups=1"});
  check_error<ShapeError>([&] { conv2d(zeros({2, 4, 5, 5}), zeros({4, 1, 3, 3}), {}, 1, 0, 1, 2); },
                          {"conv2d", "C_in=4", "[4, 1, 3, 3]", "groups=2", "expects 2"});
  check_error<ValueError>([&] { conv2d(x, zeros({4, 1, 3, 3}), {}, 1, 0, 1, 2); }, {"conv2d", "groups=2", "C_in=3"});
  check_error<ValueError>([&] { conv2d(zeros({2, 4, 5, 5}), zeros({3, 2, 3, 3}), {}, 1, 0, 1, 2); },
                          {"conv2d", "groups=2", "C_out=3"});
  check_error<ValueError>([&] { conv2d(x, w, {}, 1, 0, 1, 0); }, {"conv2d", "groups", "0"});
  check_error<ValueError>([&] { conv2d(x, w, {}, {1, 0}); }, {"conv2d", "stride", "(1, 0)"});
  check_error<ValueError>([&] { conv2d(x, w, {}, -2); }, {"conv2d", "stride", "(-2, -2)"});
  check_error<ValueError>([&] { conv2d(x, w, {}, 1, -1); }, {"conv2d", "padding", "(-1, -1)"});
  check_error<ValueError>([&] { conv2d(x, w, {}, 1, 0, 0); }, {"conv2d", "dilation", "(0, 0)"});
  check_error<ShapeError>([&] { conv2d(x, zeros({4, 3, 8, 3})); },
                          {"conv2d", "larger than the padded input", "(8, 3)", "(5, 5)", "[2, 3, 5, 5]"});
  check_error<ShapeError>([&] { conv2d(x, w, {}, 1, 0, 3); }, {"conv2d", "(7, 7)", "dilation (3, 3)"});
  check_error<ShapeError>([&] { conv2d(x, w, zeros({3})); }, {"conv2d", "bias shape [3]", "C_out=4"});
  check_error<DTypeError>([&] { conv2d(x, zeros({4, 3, 3, 3}, {.dtype = DType::f64})); },
                          {"conv2d", "float32", "float64"});
  check_error<DTypeError>([&] { conv2d(zeros({2, 3, 5, 5}, {.dtype = DType::i64}), w); }, {"conv2d", "int64"});
  check_error<ShapeError>([&] { raw::conv2d_backward_input(zeros({2, 4, 2, 2}), w, x.sizes(), {}); },
                          {"conv2d_backward", "[2, 4, 2, 2]", "[2, 4, 3, 3]"});
}

// ---- pooling ----------------------------------------------------------------------------------------------

namespace {

struct PoolCase {
  Shape input;
  Size2 kernel, stride, padding = 0, dilation = 1;
  bool ceil_mode = false;
  Shape expected;  // output shape, worked out by hand
};

// Direct max pooling: (values, argmax positions iy * W + ix), padding skipped, first maximum on ties.
std::pair<std::vector<double>, std::vector<int64_t>> naive_max_pool(const PoolCase& c, const std::vector<double>& x) {
  const int64_t planes = c.input[0] * c.input[1], h = c.input[2], w = c.input[3];
  const int64_t oh = c.expected[2], ow = c.expected[3];
  std::vector<double> values;
  std::vector<int64_t> positions;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t where = -1;
        for (int64_t ki = 0; ki < c.kernel.h; ++ki) {
          for (int64_t kj = 0; kj < c.kernel.w; ++kj) {
            const int64_t iy = oy * c.stride.h - c.padding.h + ki * c.dilation.h;
            const int64_t ix = ox * c.stride.w - c.padding.w + kj * c.dilation.w;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = x[(p * h + iy) * w + ix];
            if (where < 0 || v > best) {
              best = v;
              where = iy * w + ix;
            }
          }
        }
        values.push_back(best);
        positions.push_back(where);
      }
    }
  }
  return {values, positions};
}

// Direct average pooling with PyTorch's divisor: the window clipped to the padded input (count_include_pad),
// or the number of real input elements in it.
std::vector<double> naive_avg_pool(const PoolCase& c, const std::vector<double>& x, bool count_include_pad) {
  const int64_t planes = c.input[0] * c.input[1], h = c.input[2], w = c.input[3];
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oy = 0; oy < c.expected[2]; ++oy) {
      for (int64_t ox = 0; ox < c.expected[3]; ++ox) {
        double sum = 0;
        int64_t real = 0, padded = 0;
        for (int64_t ki = 0; ki < c.kernel.h; ++ki) {
          for (int64_t kj = 0; kj < c.kernel.w; ++kj) {
            const int64_t iy = oy * c.stride.h - c.padding.h + ki, ix = ox * c.stride.w - c.padding.w + kj;
            if (iy < h + c.padding.h && ix < w + c.padding.w) ++padded;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            sum += x[(p * h + iy) * w + ix];
            ++real;
          }
        }
        out.push_back(sum / static_cast<double>(count_include_pad ? padded : real));
      }
    }
  }
  return out;
}

std::vector<double> naive_adaptive_avg_pool(const Shape& input, Size2 out_size, const std::vector<double>& x) {
  const int64_t planes = input[0] * input[1], h = input[2], w = input[3];
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oy = 0; oy < out_size.h; ++oy) {
      const auto y0 = static_cast<int64_t>(std::floor(static_cast<double>(oy * h) / out_size.h));
      const auto y1 = static_cast<int64_t>(std::ceil(static_cast<double>((oy + 1) * h) / out_size.h));
      for (int64_t ox = 0; ox < out_size.w; ++ox) {
        const auto x0 = static_cast<int64_t>(std::floor(static_cast<double>(ox * w) / out_size.w));
        const auto x1 = static_cast<int64_t>(std::ceil(static_cast<double>((ox + 1) * w) / out_size.w));
        double sum = 0;
        for (int64_t iy = y0; iy < y1; ++iy) {
          for (int64_t ix = x0; ix < x1; ++ix) sum += x[(p * h + iy) * w + ix];
        }
        out.push_back(sum / static_cast<double>((y1 - y0) * (x1 - x0)));
      }
    }
  }
  return out;
}

const std::vector<PoolCase> kMaxPoolCases = {
    {{2, 3, 28, 28}, 2, 2, 0, 1, false, {2, 3, 14, 14}},
    {{1, 2, 7, 6}, 3, 2, 1, 1, false, {1, 2, 4, 3}},               // floor(6/2)+1, floor(5/2)+1
    {{1, 2, 7, 6}, 3, 2, 1, 1, true, {1, 2, 4, 4}},                // ceil(6/2)+1, ceil(5/2)+1
    {{1, 1, 5, 5}, 3, 3, 1, 1, true, {1, 1, 2, 2}},                // the 3rd window would start in the padding
    {{2, 1, 5, 7}, 2, 2, 0, 1, true, {2, 1, 3, 4}},                // partial last windows
    {{1, 2, 9, 8}, 3, 1, 1, 2, false, {1, 2, 7, 6}},               // dilation: extent 5
    {{1, 2, 8, 9}, {3, 2}, {2, 1}, {1, 0}, {1, 2}, true, {1, 2, 5, 7}},
};

}  // namespace

TEST_CASE("max_pool2d matches direct loops: values, indices and output shapes (incl. ceil_mode, padding)") {
  for (DType dtype : {DType::f64, DType::f32}) {
    for (size_t i = 0; i < kMaxPoolCases.size(); ++i) {
      const PoolCase& c = kMaxPoolCases[i];
      INFO("case " << i << " dtype " << dtype_name(dtype));
      Tensor x = random(c.input, 100 + i, dtype);
      auto [want, where] = naive_max_pool(c, to_vector<double>(x));
      auto [y, indices] = max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
      CHECK(indices.dtype() == DType::i64);
      check_close(y, c.expected, want, 0.0);
      CHECK(to_vector<int64_t>(indices) == where);
      check_close(max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode), c.expected, want, 0.0);
    }
  }
}

TEST_CASE("max_pool2d: stride defaults to the kernel; ties pick the first maximum; NaN propagates") {
  Tensor x = ones({1, 1, 4, 4});
  auto [y, indices] = max_pool2d_with_indices(x, 2);
  CHECK(y.sizes() == Shape{1, 1, 2, 2});
  CHECK(to_vector<int64_t>(indices) == std::vector<int64_t>{0, 2, 8, 10});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor z = from_vector(std::vector<double>{1, nan, 3, 4}, {1, 1, 2, 2});
  CHECK(std::isnan(to_vector<double>(max_pool2d(z, 2))[0]));
}

TEST_CASE("max_pool2d on float16/bfloat16, non-contiguous input") {
  for (DType half : {DType::f16, DType::bf16}) {
    INFO(dtype_name(half));
    Tensor x = random({2, 3, 6, 6}, 110, DType::f32).to(half);
    Tensor y = max_pool2d(x, 3, 2, 1);
    CHECK(y.dtype() == half);
    Tensor ref = max_pool2d(x.to(DType::f32), 3, 2, 1);
    check_close(y, ref.sizes(), to_vector<double>(ref), 0.0);
  }
  Tensor base = random({2, 6, 5, 3}, 111);
  Tensor x = base.permute({0, 3, 1, 2});  // (2, 3, 6, 5)
  REQUIRE_FALSE(x.is_contiguous());
  const PoolCase c{{2, 3, 6, 5}, 2, 1, 1, 1, false, {2, 3, 7, 6}};
  check_close(max_pool2d(x, 2, 1, 1), c.expected, naive_max_pool(c, to_vector<double>(x)).first, 0.0);
}

TEST_CASE("max_pool2d backward routes each gradient to its argmax, summing where windows overlap") {
  // 1x1x3x3 input with its maximum in the centre; 2x2 windows with stride 1 all pick the centre.
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 9, 5, 6, 7, 8}, {1, 1, 3, 3});
  x.requires_grad_(true);
  Tensor y = max_pool2d(x, 2, 1);
  y.backward(from_vector(std::vector<double>{1, 2, 3, 4}, {1, 1, 2, 2}));
  CHECK(to_vector<double>(x.grad()) == std::vector<double>{0, 0, 0, 0, 10, 0, 0, 0, 0});
  // Distinct maxima: 2x2 stride 2 on a 4x4 ramp picks the bottom-right of each window.
  Tensor r = arange(0.0, 16.0, 1.0, {.dtype = DType::f64}).reshape({1, 1, 4, 4});
  r.requires_grad_(true);
  max_pool2d(r, 2).sum().backward();
  std::vector<double> want(16, 0.0);
  for (int i : {5, 7, 13, 15}) want[i] = 1;
  CHECK(to_vector<double>(r.grad()) == want);
}

// Direct max-pool backward in double: each gradient added to its argmax, zero elsewhere.
std::vector<double> naive_max_pool_backward(const Shape& input, const std::vector<double>& gy,
                                            const std::vector<int64_t>& where) {
  const int64_t plane = input[2] * input[3];
  const int64_t out_plane = static_cast<int64_t>(gy.size()) / (input[0] * input[1]);
  std::vector<double> gx(static_cast<size_t>(input[0] * input[1] * plane), 0.0);
  for (size_t o = 0; o < gy.size(); ++o) {
    if (where[o] >= 0) gx[static_cast<size_t>(static_cast<int64_t>(o) / out_plane * plane + where[o])] += gy[o];
  }
  return gx;
}

TEST_CASE("max_pool2d forward and backward on every floating dtype, 2x2/2 vector rows and the general scatter") {
  std::vector<PoolCase> cases = kMaxPoolCases;
  cases.push_back({{2, 3, 29, 31}, 2, 2, 0, 1, false, {2, 3, 14, 15}});  // an odd row and column left over
  cases.push_back({{1, 2, 6, 70}, 2, 2, 0, 1, false, {1, 2, 3, 35}});    // rows of 16 + 16 + 3 windows
  cases.push_back({{1, 2, 9, 9}, 3, 2, 0, 1, false, {1, 2, 4, 4}});      // overlapping windows: summed
  for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const PoolCase& c = cases[i];
      INFO("case " << i << " dtype " << dtype_name(dtype));
      Tensor x = random(c.input, 200 + i).to(dtype);
      auto [want, where] = naive_max_pool(c, to_vector<double>(x));
      auto [y, indices] = max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
      CHECK(y.dtype() == dtype);
      check_close(y, c.expected, want, 0.0);
      CHECK(to_vector<int64_t>(indices) == where);
      Tensor gy = random(c.expected, 300 + i).to(dtype);
      // The gradient is allocated uninitialised: a freed block of garbage of its size comes first.
      { Tensor garbage = full(c.input, 7.0, {.dtype = dtype}); }
      Tensor gx = raw::max_pool2d_backward(gy, indices, c.input);
      CHECK(gx.dtype() == dtype);
      const double tol = dtype == DType::f64 ? 1e-15 : dtype == DType::f32 ? 1e-6 : 1e-2;
      check_close(gx, c.input, naive_max_pool_backward(c.input, to_vector<double>(gy), where), tol);
    }
  }
}

TEST_CASE("max_pool2d backward: an index outside the input plane is an IndexError naming it") {
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dtype));
    Tensor gy = ones({1, 1, 2, 2}, {.dtype = dtype});
    Tensor indices = from_vector(std::vector<int64_t>{0, 2, 8, 99}, {1, 1, 2, 2});
    CHECK_THROWS_WITH_AS(raw::max_pool2d_backward(gy, indices, {1, 1, 4, 4}), doctest::Contains("index 99"),
                         IndexError);
  }
}

TEST_CASE("max_pool2d 2x2/2 on the half types: ties keep the first, NaN wins, the tail of a row is untouched") {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    INFO(dtype_name(dtype));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Tensor x = from_vector(std::vector<double>{1, 1, 2, nan, 1, 1, 5, 3}, {1, 1, 2, 4}).to(dtype);
    auto [y, indices] = max_pool2d_with_indices(x, 2);
    std::vector<double> v = to_vector<double>(y);
    CHECK(v[0] == 1.0);
    CHECK(std::isnan(v[1]));
    CHECK(to_vector<int64_t>(indices) == std::vector<int64_t>{0, 3});
    Tensor gx = raw::max_pool2d_backward(from_vector(std::vector<double>{-2, 4}, {1, 1, 1, 2}).to(dtype), indices,
                                         x.sizes());
    CHECK(to_vector<double>(gx) == std::vector<double>{-2, 0, 0, 4, 0, 0, 0, 0});
  }
}

TEST_CASE("avg_pool2d matches direct loops with padding, ceil_mode and count_include_pad") {
  const std::vector<PoolCase> cases = {
      {{2, 3, 6, 6}, 2, 2, 0, 1, false, {2, 3, 3, 3}},
      {{1, 2, 7, 6}, 3, 2, 1, 1, false, {1, 2, 4, 3}},
      {{1, 2, 7, 6}, 3, 2, 1, 1, true, {1, 2, 4, 4}},     // last column window hangs past the padding
      {{2, 1, 5, 7}, 2, 2, 0, 1, true, {2, 1, 3, 4}},
      {{1, 2, 8, 5}, {3, 2}, {1, 2}, {1, 1}, 1, true, {1, 2, 8, 3}},     // ceil drops a window in the padding
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      for (bool include_pad : {true, false}) {
        const PoolCase& c = cases[i];
        INFO("case " << i << " dtype " << dtype_name(dtype) << " count_include_pad " << include_pad);
        Tensor x = random(c.input, 120 + i, dtype);
        Tensor y = avg_pool2d(x, c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
        check_close(y, c.expected, naive_avg_pool(c, to_vector<double>(x), include_pad),
                    dtype == DType::f64 ? 1e-14 : 1e-6);
      }
    }
  }
  // A hand-worked corner: 3x3 window, padding 1, on a 2x2 ones input -> 4/9 with, 1 without padding counted.
  CHECK(to_vector<double>(avg_pool2d(ones({1, 1, 2, 2}), 3, 1, 1))[0] == doctest::Approx(4.0 / 9.0));
  CHECK(to_vector<double>(avg_pool2d(ones({1, 1, 2, 2}), 3, 1, 1, false, false))[0] == 1.0);
}

TEST_CASE("avg_pool2d and adaptive_avg_pool2d on float16/bfloat16 and non-contiguous input") {
  for (DType half : {DType::f16, DType::bf16}) {
    INFO(dtype_name(half));
    Tensor x = random({2, 3, 7, 7}, 130, DType::f32).to(half);
    Tensor a = avg_pool2d(x, 3, 2, 1);
    CHECK(a.dtype() == half);
    check_close(a, {2, 3, 4, 4}, to_vector<double>(avg_pool2d(x.to(DType::f32), 3, 2, 1).to(half)), 1e-2);
    Tensor b = adaptive_avg_pool2d(x, {3, 2});
    CHECK(b.dtype() == half);
    check_close(b, {2, 3, 3, 2}, to_vector<double>(adaptive_avg_pool2d(x.to(DType::f32), {3, 2}).to(half)), 1e-2);
  }
  Tensor x = random({2, 7, 6, 3}, 131).permute({0, 3, 1, 2});  // (2, 3, 7, 6)
  REQUIRE_FALSE(x.is_contiguous());
  const PoolCase c{{2, 3, 7, 6}, 3, 2, 1, 1, false, {2, 3, 4, 3}};
  check_close(avg_pool2d(x, 3, 2, 1), c.expected, naive_avg_pool(c, to_vector<double>(x), true), 1e-14);
  check_close(adaptive_avg_pool2d(x, {4, 4}), {2, 3, 4, 4},
              naive_adaptive_avg_pool({2, 3, 7, 6}, {4, 4}, to_vector<double>(x)), 1e-14);
}

TEST_CASE("adaptive_avg_pool2d uses the floor/ceil window formula") {
  const std::vector<std::pair<Shape, Size2>> cases = {
      {{2, 3, 7, 7}, 3}, {{1, 2, 6, 9}, {4, 2}}, {{1, 1, 5, 5}, {2, 5}}, {{1, 2, 3, 4}, {5, 7}},
      {{2, 2, 4, 4}, 4}, {{2, 3, 8, 8}, 1},
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& [shape, out] = cases[i];
      INFO("case " << i << " dtype " << dtype_name(dtype));
      Tensor x = random(shape, 140 + i, dtype);
      check_close(adaptive_avg_pool2d(x, out), {shape[0], shape[1], out.h, out.w},
                  naive_adaptive_avg_pool(shape, out, to_vector<double>(x)), dtype == DType::f64 ? 1e-14 : 1e-6);
    }
  }
  // Hand-worked: 5 -> 3 gives row windows [0, 2), [1, 4), [3, 5).
  Tensor r = arange(0.0, 5.0, 1.0, {.dtype = DType::f64}).reshape({1, 1, 5, 1});
  CHECK(to_vector<double>(adaptive_avg_pool2d(r, {3, 1})) == std::vector<double>{0.5, 2.0, 3.5});
}

TEST_CASE("avg and adaptive pooling backward are the adjoints of the forward") {
  Tensor x = random({2, 3, 7, 6}, 150);
  const Pool2dParams p{3, 2, 1, 1, true, false};
  Tensor y = raw::avg_pool2d(x, p.kernel, p.stride, p.padding, p.ceil_mode, p.count_include_pad);
  Tensor gy = random(y.sizes(), 151);
  CHECK(dot(x, raw::avg_pool2d_backward(gy, x.sizes(), p)) == doctest::Approx(dot(y, gy)).epsilon(1e-12));
  Tensor a = raw::adaptive_avg_pool2d(x, {4, 5});
  Tensor ga = random(a.sizes(), 152);
  CHECK(dot(x, raw::adaptive_avg_pool2d_backward(ga, x.sizes())) == doctest::Approx(dot(a, ga)).epsilon(1e-12));
  // Through autograd: a 2x2 average spreads a quarter of the gradient to each element.
  Tensor z = random({1, 1, 2, 2}, 153);
  z.requires_grad_(true);
  avg_pool2d(z, 2).sum().backward();
  CHECK(to_vector<double>(z.grad()) == std::vector<double>{0.25, 0.25, 0.25, 0.25});
}

TEST_CASE("pooling argument errors name the op and the values") {
  Tensor x = zeros({1, 2, 5, 5});
  check_error<ShapeError>([&] { max_pool2d(zeros({2, 5, 5}), 2); }, {"max_pool2d", "4-D input", "[2, 5, 5]"});
  check_error<ShapeError>([&] { avg_pool2d(zeros({5, 5}), 2); }, {"avg_pool2d", "4-D input", "[5, 5]"});
  check_error<ShapeError>([&] { adaptive_avg_pool2d(zeros({2, 5, 5}), 2); }, {"adaptive_avg_pool2d", "[2, 5, 5]"});
  check_error<DTypeError>([&] { max_pool2d(zeros({1, 1, 4, 4}, {.dtype = DType::i64}), 2); },
                          {"max_pool2d", "int64"});
  check_error<ValueError>([&] { max_pool2d(x, 2, Size2{0, 1}); }, {"max_pool2d", "stride", "(0, 1)"});
  check_error<ValueError>([&] { avg_pool2d(x, 0); }, {"avg_pool2d", "kernel_size", "(0, 0)"});
  check_error<ValueError>([&] { max_pool2d(x, 2, 1, 0, 0); }, {"max_pool2d", "dilation", "(0, 0)"});
  check_error<ValueError>([&] { max_pool2d(x, 2, 1, 2); },
                          {"max_pool2d", "padding (2, 2)", "half the kernel size (2, 2)"});
  check_error<ValueError>([&] { avg_pool2d(x, 3, 1, -1); }, {"avg_pool2d", "padding (-1, -1)"});
  check_error<ShapeError>([&] { max_pool2d(x, 8, 1, 1); },
                          {"max_pool2d", "larger than the padded input", "(8, 8)", "(7, 7)"});
  check_error<ShapeError>([&] { max_pool2d(x, 3, 1, 0, 3); },
                          {"max_pool2d", "(7, 7)", "dilation (3, 3)", "[1, 2, 5, 5]"});
  check_error<ShapeError>([&] { avg_pool2d(x, {6, 2}); }, {"avg_pool2d", "larger than the padded input", "(6, 2)"});
  check_error<ValueError>([&] { adaptive_avg_pool2d(x, {0, 2}); }, {"adaptive_avg_pool2d", "output_size", "(0, 2)"});
}
