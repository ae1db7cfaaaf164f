// linear_gelu (gelu(linear(x, W, b)) in one op) against the two ops composed: values and all three gradients in
// float32 on the fused CPU kernels, across one block, many blocks, a last short block and uneven backward lanes,
// with and without bias, non-contiguous operands, a frozen weight; the same bits on 1 and 2 threads; float64 and
// the erf form through the composition; bfloat16 autocast; the kernels taking exactly float32; the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "syncgrad.h"
#include "tests/check_error.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

Tensor random_of(const Shape& shape, uint64_t seed, DType dtype, double scale = 1.0) {
  Generator gen(seed);
  return raw::to(raw::mul(randn(shape, {.dtype = DType::f64}, &gen), scale), dtype);
}

// The largest |a - b| relative to b's largest magnitude (1 at least).
double relative_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = to_vector<double>(a), vb = to_vector<double>(b);
  REQUIRE(va.size() == vb.size());
  double diff = 0.0, scale = 1.0;
  for (size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::abs(va[i] - vb[i]));
    scale = std::max(scale, std::abs(vb[i]));
  }
  return diff / scale;
}

struct Run {
  Tensor out, grad_x, grad_w, grad_b;
};

// One forward and backward of linear_gelu (fused) or gelu(linear(...)) on fresh leaves made from the sources.
Run run(bool fused, const Tensor& x_source, const Tensor& w_source, const Tensor& b_source,
        GeluApproximate approximate = GeluApproximate::tanh, bool weight_grad = true) {
  Tensor x = raw::clone(x_source).requires_grad_();
  Tensor w = raw::clone(w_source).requires_grad_(weight_grad);
  Tensor b = b_source.defined() ? raw::clone(b_source).requires_grad_() : Tensor();
  Tensor y = fused ? linear_gelu(x, w, b, approximate) : gelu(linear(x, w, b), approximate);
  Shape grad_shape = y.sizes();
  y.backward(random_of(grad_shape, 99, y.dtype()));
  return {y, x.grad(), weight_grad ? w.grad() : Tensor(), b.defined() ? b.grad() : Tensor()};
}

void check_close(const Run& fused, const Run& plain, double tolerance) {
  CHECK(relative_diff(fused.out, plain.out) < tolerance);
  CHECK(relative_diff(fused.grad_x, plain.grad_x) < tolerance);
  if (plain.grad_w.defined()) CHECK(relative_diff(fused.grad_w, plain.grad_w) < tolerance);
  if (plain.grad_b.defined()) CHECK(relative_diff(fused.grad_b, plain.grad_b) < tolerance);
}

void check_same_bits(const Tensor& a, const Tensor& b) { CHECK(to_vector<float>(a) == to_vector<float>(b)); }

}  // namespace

TEST_CASE("linear_gelu equals gelu(linear(...)) in float32 over one block, many blocks and uneven lanes") {
  struct Case {
    int64_t rows, in, out;
    bool bias;
  };
  // 512 features: blocks of 256 rows; 5127 rows = 20 full blocks and a short one, in 11 lanes of two blocks.
  for (const Case c : {Case{1, 3, 16, true}, Case{17, 128, 40, false}, Case{300, 128, 512, true},
                       Case{5127, 64, 512, true}, Case{4099, 24, 40, false}}) {
    CAPTURE(c.rows);
    CAPTURE(c.out);
    const Tensor x = random_of({c.rows, c.in}, 1, DType::f32);
    const Tensor w = random_of({c.out, c.in}, 2, DType::f32, 1.0 / std::sqrt(static_cast<double>(c.in)));
    const Tensor b = c.bias ? random_of({c.out}, 3, DType::f32) : Tensor();
    const Run fused = run(true, x, w, b), plain = run(false, x, w, b);
    check_close(fused, plain, 1e-5);
    // Both near the float64 composition.
    const Run exact = run(false, raw::to(x, DType::f64), raw::to(w, DType::f64),
                          c.bias ? raw::to(b, DType::f64) : Tensor());
    check_close(fused, exact, 1e-4);
  }
}

TEST_CASE("linear_gelu: leading dims, a non-contiguous input, a transposed weight, a frozen weight") {
  const Tensor x = raw::transpose(random_of({7, 300, 32}, 4, DType::f32), 0, 1);  // (300, 7, 32), not contiguous
  const Tensor w = raw::transpose(random_of({32, 96}, 5, DType::f32, 0.2), 0, 1);  // (96, 32) as a view
  const Tensor b = random_of({96}, 6, DType::f32);
  const Run fused = run(true, x, w, b), plain = run(false, x, w, b);
  CHECK(fused.out.sizes() == Shape{300, 7, 96});
  CHECK(fused.grad_x.sizes() == x.sizes());
  check_close(fused, plain, 1e-5);
  const Run frozen = run(true, x, w, b, GeluApproximate::tanh, false);
  const Run frozen_plain = run(false, x, w, b, GeluApproximate::tanh, false);
  check_close(frozen, frozen_plain, 1e-5);
}

TEST_CASE("linear_gelu gives the same bits on 1 and 2 intra-op threads") {
  const int before = get_num_threads();
  const Tensor x = random_of({5127, 64}, 7, DType::f32);
  const Tensor w = random_of({512, 64}, 8, DType::f32, 0.125);
  const Tensor b = random_of({512}, 9, DType::f32);
  set_num_threads(1);
  const Run one = run(true, x, w, b);
  set_num_threads(2);
  const Run two = run(true, x, w, b);
  set_num_threads(before);
  check_same_bits(one.out, two.out);
  check_same_bits(one.grad_x, two.grad_x);
  check_same_bits(one.grad_w, two.grad_w);
  check_same_bits(one.grad_b, two.grad_b);
}

TEST_CASE("linear_gelu in float64, in the erf form and under bfloat16 autocast matches the composition") {
  const Tensor x = random_of({40, 12}, 10, DType::f64), w = random_of({24, 12}, 11, DType::f64, 0.3);
  const Tensor b = random_of({24}, 12, DType::f64);
  check_close(run(true, x, w, b), run(false, x, w, b), 1e-12);
  const Tensor xf = raw::to(x, DType::f32), wf = raw::to(w, DType::f32), bf = raw::to(b, DType::f32);
  check_close(run(true, xf, wf, bf, GeluApproximate::none), run(false, xf, wf, bf, GeluApproximate::none), 1e-5);
  Tensor fused, plain;
  {
    auto amp = autocast(DeviceType::kCPU, DType::bf16);
    fused = linear_gelu(xf, wf, bf, GeluApproximate::tanh);
    plain = gelu(linear(xf, wf, bf), GeluApproximate::tanh);
  }
  CHECK(fused.dtype() == DType::bf16);
  check_same_bits(raw::to(fused, DType::f32), raw::to(plain, DType::f32));
}

TEST_CASE("the fused CPU kernels take float32 and leave other dtypes to the composition") {
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = random_of({20, 8}, 13, dtype), w = random_of({16, 8}, 14, dtype);
    const Tensor pre = empty({20, 16}, {.dtype = dtype}), out = empty({20, 16}, {.dtype = dtype});
    const bool taken = kernels::linear_gelu_forward(Device(), out, pre, x, w, Tensor());
    CHECK(taken == (dtype == DType::f32));
    const Tensor grad_x = empty({20, 8}, {.dtype = dtype});
    CHECK(kernels::linear_gelu_backward(Device(), grad_x, Tensor(), Tensor(), random_of({20, 16}, 15, dtype), pre,
                                        Tensor(), w) == (dtype == DType::f32));
    if (taken) CHECK(relative_diff(out, raw::gelu(raw::linear(x, w), GeluApproximate::tanh)) < 1e-5);
  }
}

TEST_CASE("linear_gelu names the operands it refuses") {
  const Tensor x = random_of({4, 8}, 16, DType::f32), w = random_of({6, 8}, 17, DType::f32);
  check_error<ShapeError>([&] { linear_gelu(random_of({4, 5}, 18, DType::f32), w); },
                          {"linear_gelu", "[4, 5]", "in_features = 8"});
  check_error<ShapeError>([&] { linear_gelu(x, w, random_of({5}, 19, DType::f32)); },
                          {"linear_gelu", "bias of shape [5]", "[6]"});
  check_error<ShapeError>([&] { linear_gelu(x, random_of({6, 8, 1}, 20, DType::f32)); }, {"must be 2-D"});
  check_error<DTypeError>([&] { linear_gelu(x, raw::to(w, DType::f64)); }, {"linear_gelu", "float64"});
}
