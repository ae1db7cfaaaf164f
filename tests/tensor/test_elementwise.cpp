// Elementwise ops: values against hand-computed references, broadcasting, PyTorch type promotion (0-dim
// tensors and numbers), every dtype, strided inputs, in-place semantics and errors, and gradient conventions
// at ties and kinks.
#include <doctest/doctest.h>

#include "tests/check_error.h"

#include <cmath>
#include <limits>
#include <string>

#include "syncgrad.h"
#include "tensor/cpu/gelu_tanh.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

const DType kFloating[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }


Tensor mat23() { return tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3}); }

}  // namespace

TEST_CASE("arithmetic values with broadcasting") {
  Tensor a = mat23();
  Tensor row = tensor({10.f, 20.f, 30.f});
  Tensor col = tensor({1.f, 2.f}).view({2, 1});
  CHECK(values(a + row) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(values(a - col) == std::vector<double>{0, 1, 2, 2, 3, 4});
  CHECK(values(a * row) == std::vector<double>{10, 40, 90, 40, 100, 180});
  CHECK(values(row / col) == std::vector<double>{10, 20, 30, 5, 10, 15});
  CHECK(values(add(a, row, 2)) == std::vector<double>{21, 42, 63, 24, 45, 66});
  CHECK(values(sub(a, row, 0.5)) == std::vector<double>{-4, -8, -12, -1, -5, -9});
  Tensor outer = col * row;  // (2, 1) x (3,) -> (2, 3)
  CHECK(outer.sizes() == Shape{2, 3});
  CHECK(values(outer) == std::vector<double>{10, 20, 30, 20, 40, 60});
  CHECK(values(2 - a) == std::vector<double>{1, 0, -1, -2, -3, -4});
  CHECK(values(12 / a) == std::vector<double>{12, 6, 4, 3, 2.4000000953674316, 2});
  CHECK(values(-a) == std::vector<double>{-1, -2, -3, -4, -5, -6});
}

TEST_CASE("shape errors name the op and both shapes") {
  check_error<ShapeError>([] { (void)(zeros({2, 3}) + zeros({4})); }, {"add", "[2, 3]", "[4]"});
  check_error<ShapeError>([] { (void)maximum(zeros({2}), zeros({3, 1, 5})); }, {"maximum", "[2]", "[3, 1, 5]"});
  check_error<ShapeError>([] { (void)where(zeros({2}) > 0, zeros({3}), zeros({2})); }, {"where", "[2]", "[3]"});
}

TEST_CASE("type promotion: tensors, 0-dim tensors and numbers") {
  Tensor i64 = tensor({1, 2, 3});
  Tensor u8 = i64.to(DType::u8);
  CHECK((i64 + 2.5).dtype() == DType::f32);
  CHECK(values(i64 + 2.5) == std::vector<double>{3.5, 4.5, 5.5});
  CHECK((u8 + scalar_tensor(Scalar(int64_t{1}), DType::i64, kCPU)).dtype() == DType::u8);
  CHECK((u8 + 1).dtype() == DType::u8);
  CHECK((u8 + i64.to(DType::i32)).dtype() == DType::i32);
  CHECK((zeros({2}, {.dtype = DType::f16}) + scalar_tensor(1.5, DType::f32, kCPU)).dtype() == DType::f16);
  CHECK((zeros({2}, {.dtype = DType::f16}) + zeros({2}, {.dtype = DType::bf16})).dtype() == DType::f32);
  CHECK((i64.to(DType::i32) + scalar_tensor(1.5, DType::f64, kCPU)).dtype() == DType::f64);
  CHECK((zeros({2}) + zeros({2}, {.dtype = DType::f64})).dtype() == DType::f64);
  CHECK((zeros({2}) * scalar_tensor(2.0, DType::f64, kCPU)).dtype() == DType::f32);
  // Two 0-dim tensors promote as dimensioned ones; a number against a 0-dim integer tensor raises it.
  CHECK((scalar_tensor(1.0, DType::f32, kCPU) + scalar_tensor(2.0, DType::f64, kCPU)).dtype() == DType::f64);
  CHECK((scalar_tensor(Scalar(int64_t{3}), DType::i64, kCPU) * 0.5).dtype() == DType::f32);
  // bool: + is logical or, * logical and; a bool tensor with an integer number gives i64.
  Tensor flags = tensor({1.f, 0.f, 1.f}) > 0;
  CHECK((flags + flags).dtype() == DType::boolean);
  CHECK(values(flags * (tensor({1.f, 1.f, 0.f}) > 0)) == std::vector<double>{1, 0, 0});
  CHECK((flags + 1).dtype() == DType::i64);
  // True division of integers is floating; other integer arithmetic stays integral.
  CHECK((tensor({7, -7}) / 2).dtype() == DType::f32);
  CHECK(values(tensor({7, -7}) / 2) == std::vector<double>{3.5, -3.5});
  CHECK((tensor({7, -7}) * 2).dtype() == DType::i64);
  CHECK(values(tensor({7, -7}) - tensor({10, 10})) == std::vector<double>{-3, -17});
  check_error<DTypeError>([&] { (void)(flags - flags); }, {"sub", "bool"});
}

TEST_CASE("every floating dtype computes in float and keeps its dtype") {
  for (DType dt : kFloating) {
    CAPTURE(dtype_name(dt));
    Tensor a = tensor({1.5f, -2.f, 4.f}).to(dt);
    Tensor b = tensor({0.5f, 4.f, -2.f}).to(dt);
    CHECK((a + b).dtype() == dt);
    CHECK(values(a + b) == std::vector<double>{2, 2, 2});
    CHECK(values(a * b) == std::vector<double>{0.75, -8, -8});
    CHECK(values(a / b) == std::vector<double>{3, -0.5, -2});
    CHECK(values(maximum(a, b)) == std::vector<double>{1.5, 4, 4});
    CHECK(values(relu(a)) == std::vector<double>{1.5, 0, 4});
    CHECK(values(a * 2) == std::vector<double>{3, -4, 8});
    CHECK(exp(a).dtype() == dt);
    CHECK(std::abs(values(exp(a))[0] - std::exp(1.5)) < 0.02 * std::exp(1.5));
    CHECK(values(a < b) == std::vector<double>{0, 1, 0});
  }
}

TEST_CASE("integer dtypes") {
  Tensor a = tensor({5, -3, 0});
  Tensor b = tensor({2, 2, 7});
  for (DType dt : {DType::i64, DType::i32}) {
    Tensor x = a.to(dt), y = b.to(dt);
    CHECK((x * y).dtype() == dt);
    CHECK(values(x * y) == std::vector<double>{10, -6, 0});
    CHECK(values(maximum(x, y)) == std::vector<double>{5, 2, 7});
    CHECK(values(abs(x)) == std::vector<double>{5, 3, 0});
    CHECK(values(sign(x)) == std::vector<double>{1, -1, 0});
    CHECK(values(clamp(x, -1, 3)) == std::vector<double>{3, -1, 0});
  }
  Tensor u = tensor({250, 3}).to(DType::u8);
  CHECK(values(u + 10) == std::vector<double>{4, 13});  // wraps like uint8 arithmetic
  CHECK(values(pow(tensor({2, 3, -2}), 3)) == std::vector<double>{8, 27, -8});
  CHECK(pow(tensor({2, 3}), 3).dtype() == DType::i64);
  CHECK(pow(tensor({2, 3}), 0.5).dtype() == DType::f32);
}

TEST_CASE("non-contiguous, sliced and expanded inputs") {
  Tensor base = arange(12).to(DType::f32).view({3, 4});
  Tensor t = base.transpose(0, 1);               // (4, 3), strides (1, 4)
  Tensor s = raw::slice(base, 1, 0, 4, 2);        // (3, 2), every other column
  Tensor e = tensor({1.f, 2.f, 3.f}).view({1, 3}).expand({4, 3});
  CHECK(values(t + e) == std::vector<double>{1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14});
  CHECK(values(s * 2) == std::vector<double>{0, 4, 8, 12, 16, 20});
  CHECK(values(exp(s) > 1) == std::vector<double>{0, 1, 1, 1, 1, 1});
  CHECK(values(where(t > 5, t, e)) == std::vector<double>{1, 2, 8, 1, 2, 9, 1, 6, 10, 1, 7, 11});
  CHECK(values(sqrt(t.to(DType::f64))) == values(sqrt(t.contiguous().to(DType::f64))));
  // A big transposed operand goes through the strided path; a big contiguous one through the threaded flat path.
  Tensor big = arange(600000).to(DType::f32).view({1000, 600});
  Tensor sum_t = big.transpose(0, 1) + big.transpose(0, 1);
  CHECK(sum_t.sizes() == Shape{600, 1000});
  CHECK(values(sum_t.select(0, 599).narrow(0, 998, 2)) == std::vector<double>{2 * 599399.0, 2 * 599999.0});
  std::vector<double> flat = values(big + 1);
  CHECK(flat[0] == 1);
  CHECK(flat[300001] == 300002);
  CHECK(flat[599999] == 600000);
}

TEST_CASE("pow, maximum and minimum") {
  Tensor x = tensor({1.0, 4.0, 9.0});
  CHECK(values(pow(x, 0.5)) == std::vector<double>{1, 2, 3});
  CHECK(values(pow(x, tensor({2.0, 0.5, 0.0}))) == std::vector<double>{1, 2, 1});
  CHECK(values(pow(2.0, tensor({0.0, 3.0, -1.0}))) == std::vector<double>{1, 8, 0.5});
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor with_nan = tensor({nan, 1.0, 5.0});
  std::vector<double> mx = values(maximum(with_nan, tensor({0.0, nan, 2.0})));
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 5);
  CHECK(values(minimum(tensor({3.0, -1.0}), tensor({2.0, 0.0}))) == std::vector<double>{2, -1});
}

TEST_CASE("comparisons and logical ops give bool tensors") {
  Tensor a = tensor({1.f, 2.f, 3.f});
  Tensor b = tensor({3.f, 2.f, 1.f});
  CHECK((a == b).dtype() == DType::boolean);
  CHECK(values(a == b) == std::vector<double>{0, 1, 0});
  CHECK(values(a != b) == std::vector<double>{1, 0, 1});
  CHECK(values(a < b) == std::vector<double>{1, 0, 0});
  CHECK(values(a <= b) == std::vector<double>{1, 1, 0});
  CHECK(values(a > b) == std::vector<double>{0, 0, 1});
  CHECK(values(a >= b) == std::vector<double>{0, 1, 1});
  CHECK(values(a > 1.5) == std::vector<double>{0, 1, 1});
  CHECK(values(1.5 > a) == std::vector<double>{1, 0, 0});
  CHECK(values(2 == a) == std::vector<double>{0, 1, 0});
  CHECK(values(2 <= a) == std::vector<double>{0, 1, 1});
  CHECK(values(tensor({1, 2, 3}) == 2) == std::vector<double>{0, 1, 0});
  CHECK(values(tensor({1, 2, 3}) < 2.5) == std::vector<double>{1, 1, 0});  // compared as floats
  CHECK(values(a.view({3, 1}) < b).size() == 9);
  Tensor p = a > 1.5, q = b > 1.5;
  CHECK(values(logical_and(p, q)) == std::vector<double>{0, 1, 0});
  CHECK(values(logical_or(p, q)) == std::vector<double>{1, 1, 1});
  CHECK(values(logical_xor(p, q)) == std::vector<double>{1, 0, 1});
  CHECK(values(logical_not(tensor({0.f, 2.f}))) == std::vector<double>{1, 0});
  CHECK(values(logical_and(tensor({0, 5}), tensor({1.f, 1.f}))) == std::vector<double>{0, 1});
  Tensor x = tensor({1.f}).requires_grad_();
  CHECK_FALSE((x > 0).requires_grad());
}

TEST_CASE("where broadcasts condition and both branches") {
  Tensor cond = tensor({1.f, 0.f, 1.f}) > 0;            // (3,)
  Tensor a = tensor({1.f, 2.f}).view({2, 1});           // (2, 1)
  Tensor r = where(cond, a, tensor({7.0}));             // f32 with f64 -> f64
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(r.dtype() == DType::f64);
  CHECK(values(r) == std::vector<double>{1, 7, 1, 2, 7, 2});
  CHECK(values(where(cond, tensor({1, 2, 3}), -1)) == std::vector<double>{1, -1, 3});
  check_error<DTypeError>([&] { (void)where(tensor({1.f}), a, a); }, {"where", "bool", "float32"});
}

TEST_CASE("clamp with number bounds, tensor bounds, one bound, crossed bounds and NaN") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor({-2.0, -0.5, 0.5, 2.0, nan, -inf});
  std::vector<double> c = values(clamp(x, -1, 1));
  CHECK(std::vector<double>(c.begin(), c.begin() + 4) == std::vector<double>{-1, -0.5, 0.5, 1});
  CHECK(std::isnan(c[4]));
  CHECK(c[5] == -1);
  std::vector<double> upper = values(clamp(x, std::nullopt, 0));
  CHECK(upper[3] == 0);
  CHECK(upper[5] == -inf);
  CHECK(values(clamp(tensor({0.0, 5.0}), 3, 1)) == std::vector<double>{1, 1});  // min > max gives max
  CHECK(clamp(tensor({1, 5}), 0.5, 2).dtype() == DType::f32);
  Tensor lo = tensor({0.0, 1.0, 2.0});
  Tensor hi = tensor({1.0, 1.5, 2.5}).view({3, 1});
  Tensor ct = clamp(tensor({0.5, 0.5, 3.0}), lo, hi);
  CHECK(ct.sizes() == Shape{3, 3});
  CHECK(values(ct) == std::vector<double>{0.5, 1, 1, 0.5, 1, 1.5, 0.5, 1, 2.5});
  CHECK(values(clamp(tensor({-1.0, 3.0}), Tensor(), tensor({2.0}))) == std::vector<double>{-1, 2});
  CHECK_THROWS_AS(clamp(x, std::nullopt, std::nullopt), ValueError);
}

// The vectorised tanh-GELU (tensor/cpu/gelu_tanh.h): float32 close to the formula in double (Eigen's tanh is a
// rational approximation: ~1e-7 absolute where gelu is near 0, 1e-5 relative elsewhere), and
// bfloat16 bit for bit the float32 code on the widened values, rounded once, for lengths around the packet
// width and the bfloat16 path's blocks, both directions.
TEST_CASE("gelu tanh fast path: float32 against double, bfloat16 against float32 on the same values") {
  Generator gen(41);
  for (int64_t n : {1, 15, 16, 17, 1023, 1024, 1025, 5000}) {
    CAPTURE(n);
    const Tensor x = mul(randn({n}, {}, &gen), 3.0), g = randn({n}, {}, &gen);
    const Tensor y = empty({n}), gx = empty({n});
    REQUIRE(cpu::gelu_tanh_contiguous(y, x));
    REQUIRE(cpu::gelu_tanh_backward_contiguous(gx, g, x));
    const std::vector<double> xs = values(x), gs = values(g), ys = values(y), gxs = values(gx);
    for (int64_t i = 0; i < n; ++i) {
      const double v = xs[i], t = std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v));
      const double slope = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * v * v);
      const double y_ref = 0.5 * v * (1 + t), gx_ref = gs[i] * slope;
      CHECK(std::abs(ys[i] - y_ref) <= 1e-6 + 1e-5 * std::abs(y_ref));
      // The slope multiplies tanh's error by x (1 - t^2) and the incoming gradient.
      CHECK(std::abs(gxs[i] - gx_ref) <= 1e-6 * (1 + std::abs(gs[i]) * (1 + std::abs(v))) + 1e-5 * std::abs(gx_ref));
    }
    const Tensor xb = x.to(DType::bf16), gb = g.to(DType::bf16);
    const Tensor yb = empty({n}, {.dtype = DType::bf16}), gxb = empty({n}, {.dtype = DType::bf16});
    REQUIRE(cpu::gelu_tanh_contiguous(yb, xb));
    REQUIRE(cpu::gelu_tanh_backward_contiguous(gxb, gb, xb));
    const Tensor y_widened = empty({n}), gx_widened = empty({n});
    REQUIRE(cpu::gelu_tanh_contiguous(y_widened, xb.to(DType::f32)));
    REQUIRE(cpu::gelu_tanh_backward_contiguous(gx_widened, gb.to(DType::f32), xb.to(DType::f32)));
    CHECK(values(yb) == values(y_widened.to(DType::bf16)));
    CHECK(values(gxb) == values(gx_widened.to(DType::bf16)));
  }
}

TEST_CASE("unary ops against reference values") {
  Tensor x = tensor({-1.0, 0.0, 0.5, 2.0});
  CHECK(values(abs(x)) == std::vector<double>{1, 0, 0.5, 2});
  CHECK(values(relu(x)) == std::vector<double>{0, 0, 0.5, 2});
  CHECK(values(square(x)) == std::vector<double>{1, 0, 0.25, 4});
  CHECK(values(sign(x)) == std::vector<double>{-1, 0, 1, 1});
  CHECK(values(sigmoid(tensor({0.0})))[0] == 0.5);
  // Reference values (math tables): gelu(1) = Phi(1) = 0.8413447460685429; tanh form 0.8411919906082768.
  CHECK(values(gelu(tensor({1.0})))[0] == doctest::Approx(0.8413447460685429).epsilon(1e-12));
  CHECK(values(gelu(tensor({1.0}), GeluApproximate::tanh))[0] == doctest::Approx(0.8411919906082768).epsilon(1e-12));
  CHECK(values(gelu(tensor({-3.0})))[0] == doctest::Approx(-0.004049694).scale(0).epsilon(1e-6));
  CHECK(values(tanh(tensor({0.5})))[0] == doctest::Approx(0.46211715726000974));
  CHECK(values(exp(tensor({1.0})))[0] == doctest::Approx(2.718281828459045));
  CHECK(values(log(tensor({std::exp(2.0)})))[0] == doctest::Approx(2.0));
  CHECK(values(log1p(tensor({1e-10})))[0] == doctest::Approx(1e-10).scale(0).epsilon(1e-6));
  CHECK(values(sqrt(tensor({9.0})))[0] == 3);
  CHECK(values(rsqrt(tensor({4.0})))[0] == 0.5);
  CHECK(values(sigmoid(tensor({-1000.0, 1000.0}))) == std::vector<double>{0, 1});
  // Integer inputs of floating-only ops give the default float dtype; bool is refused by arithmetic ops.
  CHECK(exp(tensor({0, 1})).dtype() == DType::f32);
  CHECK(values(sqrt(tensor({4, 9}))) == std::vector<double>{2, 3});
  CHECK(neg(tensor({2, -3})).dtype() == DType::i64);
  check_error<DTypeError>([] { (void)neg(tensor({1.f}) > 0); }, {"neg", "bool"});
}

TEST_CASE("in-place ops: values, dtype kept, version bumped") {
  Tensor x = tensor({1.f, 2.f, 3.f});
  uint64_t v0 = x.version();
  add_(x, tensor({1.f, 1.f, 1.f}), 2);
  CHECK(values(x) == std::vector<double>{3, 4, 5});
  CHECK(x.version() > v0);
  x -= 1;
  x *= tensor({2.f});
  x /= 2;
  CHECK(values(x) == std::vector<double>{2, 3, 4});
  x += tensor({0.5, 0.5, 0.5});  // f64 operand: computed in f64, stored as f32
  CHECK(x.dtype() == DType::f32);
  CHECK(values(x) == std::vector<double>{2.5, 3.5, 4.5});
  relu_(sub_(x, 3.0));
  CHECK(values(x) == std::vector<double>{0, 0.5, 1.5});
  clamp_(x, 0.25, 1);
  CHECK(values(x) == std::vector<double>{0.25, 0.5, 1});
  Tensor i = tensor({4, 6});
  i *= 3;
  i += tensor({1, 1}).to(DType::u8);
  CHECK(values(i) == std::vector<double>{13, 19});
  // In place into a strided view writes through to the base.
  Tensor m = zeros({2, 3});
  Tensor col = m.select(1, 1);
  col += tensor({5.f, 6.f});
  CHECK(values(m) == std::vector<double>{0, 5, 0, 0, 6, 0});
  // An operand overlapping the target in another layout is read before being overwritten.
  Tensor sq = arange(4).to(DType::f32).view({2, 2});
  sq += sq.transpose(0, 1);
  CHECK(values(sq) == std::vector<double>{0, 3, 3, 6});
}

TEST_CASE("in-place errors: castability, growing the target, overlapping target, leaf that requires grad") {
  Tensor i = tensor({1, 2});
  check_error<DTypeError>([&] { div_(i, 2); }, {"div_", "float32", "int64"});
  check_error<DTypeError>([&] { i += tensor({0.5f, 0.5f}); }, {"add_", "float32", "int64"});
  check_error<DTypeError>([&] { clamp_(i, 0.5, 1); }, {"clamp_", "float32", "int64"});
  Tensor flags = tensor({1.f}) > 0;
  check_error<DTypeError>([&] { flags += 1; }, {"int64", "bool"});
  CHECK(values(i) == std::vector<double>{1, 2});
  Tensor row = zeros({3});
  check_error<ShapeError>([&] { row += zeros({2, 3}); }, {"add_", "[3]", "[2, 3]"});
  check_error<ShapeError>([&] { mul_(zeros({2, 1}), zeros({2, 3})); }, {"mul_", "[2, 1]", "[2, 3]"});
  Tensor expanded = zeros({1, 3}).expand({2, 3});
  check_error<ValueError>([&] { expanded += 1; }, {"add_", "[2, 3]", "clone"});
  Tensor w = ones({2}).requires_grad_();
  check_error<AutogradError>([&] { w += 1; }, {"add_", "leaf"});
  check_error<AutogradError>([&] { relu_(w); }, {"relu_", "leaf"});
  {
    NoGradGuard guard;
    w -= 0.5;
  }
  CHECK(values(w) == std::vector<double>{0.5, 0.5});
  CHECK(w.is_leaf());
}

TEST_CASE("gradient conventions at ties and kinks, and gradient dtypes") {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor b = tensor({1.0, 5.0, 0.0}).requires_grad_();
  maximum(a, b).sum().backward();
  CHECK(values(a.grad()) == std::vector<double>{0.5, 0, 1});
  CHECK(values(b.grad()) == std::vector<double>{0.5, 1, 0});
  Tensor x = tensor({-1.0, 0.0, 2.0}).requires_grad_();
  (relu(x) + abs(x)).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{-1, 0, 2});
  Tensor y = tensor({-1.0, 0.0, 1.0, 2.0}).requires_grad_();
  clamp(y, 0, 1).sum().backward();  // the gradient passes at the bounds themselves
  CHECK(values(y.grad()) == std::vector<double>{0, 1, 1, 0});
  Tensor f = tensor({1.f, 2.f}).requires_grad_();
  Tensor d = tensor({3.0, 4.0}).requires_grad_();
  Tensor out = f * d;
  CHECK(out.dtype() == DType::f64);
  out.sum().backward();
  CHECK(f.grad().dtype() == DType::f32);
  CHECK(values(f.grad()) == std::vector<double>{3, 4});
  CHECK(values(d.grad()) == std::vector<double>{1, 2});
  Tensor h = tensor({1.f, 2.f}).to(DType::f16).requires_grad_();
  (h * 3.0 + 1).sum().backward();
  CHECK(h.grad().dtype() == DType::f16);
  CHECK(values(h.grad()) == std::vector<double>{3, 3});
}

TEST_CASE("broadcast gradients are summed back to each input's shape") {
  Tensor a = ones({2, 3}).requires_grad_();
  Tensor b = tensor({1.f, 2.f, 3.f}).requires_grad_();
  Tensor c = scalar_tensor(2.0, DType::f32, kCPU).requires_grad_();
  (a * b * c).sum().backward();
  CHECK(b.grad().sizes() == Shape{3});
  CHECK(values(b.grad()) == std::vector<double>{4, 4, 4});
  CHECK(c.grad().dim() == 0);
  CHECK(c.grad().item<double>() == 12);
  CHECK(values(a.grad()) == std::vector<double>{2, 4, 6, 2, 4, 6});
}

TEST_CASE("in-place ops on a non-leaf record history") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor w = tensor({3.0, 4.0}).requires_grad_();
  Tensor y = x * 2;
  y *= w;    // y = 2 x w
  y += x;    // y = 2 x w + x
  relu_(y);
  CHECK_FALSE(y.is_leaf());
  y.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{7, 9});
  CHECK(values(w.grad()) == std::vector<double>{2, 4});
  // A tensor without history becomes part of the graph when a tensor that requires grad is added in place.
  Tensor acc = zeros({2}, {.dtype = DType::f64});
  acc += x;
  CHECK(acc.requires_grad());
  (acc * acc).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{9, 13});
}
