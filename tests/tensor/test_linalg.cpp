// Matrix products (mm, bmm, matmul, addmm, linear) against naive triple loops in double: every matmul shape
// combination, transposed / sliced / broadcast operands, batch broadcasting, dtypes, threads and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "autograd/node.h"
#include "syncgrad.h"

using namespace syncgrad;

namespace {

std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }

// a (M, K) @ b (K, N), both row-major.
std::vector<double> naive_mm(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t k,
                             int64_t n) {
  std::vector<double> c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  }
  return c;
}

std::vector<double> naive_mm(const Tensor& a, const Tensor& b) {
  return naive_mm(values(a), values(b), a.size(0), a.size(1), b.size(1));
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])));
  }
}

Tensor rand_f64(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, {.dtype = DType::f64}, &gen);
}

// Small integers, exact in every dtype.
Tensor small_ints(const Shape& shape, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return raw::to(randint(-4, 5, shape, {.dtype = DType::i64}, &gen), dtype);
}

template <class E>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected exception was not thrown");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("mm matches a naive triple loop for float32, float64 and sizes on both sides of Eigen's lazy path") {
  for (Shape mkn : {Shape{2, 3, 4}, Shape{1, 7, 1}, Shape{5, 1, 6}, Shape{67, 129, 33}}) {
    Tensor a = rand_f64({mkn[0], mkn[1]}, 1), b = rand_f64({mkn[1], mkn[2]}, 2);
    std::vector<double> want = naive_mm(a, b);
    Tensor c64 = mm(a, b);
    CHECK(c64.sizes() == Shape{mkn[0], mkn[2]});
    CHECK(c64.dtype() == DType::f64);
    check_close(values(c64), want, 1e-12);
    Tensor c32 = mm(a.to(DType::f32), b.to(DType::f32));
    CHECK(c32.dtype() == DType::f32);
    check_close(values(c32), want, 1e-4);
  }
}

TEST_CASE("mm on integer dtypes is exact; uint8 and bool are refused with a DTypeError") {
  for (DType dtype : {DType::i64, DType::i32}) {
    Tensor a = small_ints({4, 6}, 3, dtype), b = small_ints({6, 5}, 4, dtype);
    Tensor c = mm(a, b);
    CHECK(c.dtype() == dtype);
    CHECK(values(c) == naive_mm(a, b));
  }
  std::string msg = error_of<DTypeError>([] { mm(ones({2, 2}, {.dtype = DType::u8}), ones({2, 2}, {.dtype = DType::u8})); });
  CHECK(contains(msg, "uint8"));
  msg = error_of<DTypeError>(
      [] { mm(ones({2, 2}, {.dtype = DType::boolean}), ones({2, 2}, {.dtype = DType::boolean})); });
  CHECK(contains(msg, "mm"));
  CHECK(contains(msg, "bool"));
}

TEST_CASE("mm on float16 and bfloat16 computes in float32 and rounds once") {
  for (DType dtype : {DType::f16, DType::bf16}) {
    Tensor a = rand_f64({9, 17}, 5).to(dtype), b = rand_f64({17, 3}, 6).to(dtype);
    Tensor c = mm(a, b);
    CHECK(c.dtype() == dtype);
    // Reference on the rounded inputs; the only error left is the final rounding (2^-8 or 2^-11 relative).
    double tol = dtype == DType::bf16 ? 8e-3 : 1e-3;
    check_close(values(c), naive_mm(a, b), tol);
    // Transposed half operands are read in place too.
    check_close(values(mm(b.t(), a.t())), naive_mm(b.t().contiguous(), a.t().contiguous()), tol);
  }
}

TEST_CASE("mm reads transposed, sliced, strided and broadcast operands correctly") {
  Tensor x = rand_f64({6, 8}, 7), y = rand_f64({5, 6}, 8);
  // Transposed operands (column-major views).
  check_close(values(mm(x.t(), y.t())), naive_mm(x.t().contiguous(), y.t().contiguous()), 1e-12);
  // Column slices: the leading dimension is larger than the row length.
  Tensor xs = x.narrow(1, 2, 5);  // (6, 5), row stride 8
  check_close(values(mm(xs, y)), naive_mm(xs.contiguous(), y), 1e-12);
  check_close(values(mm(y, xs)), naive_mm(y, xs.contiguous()), 1e-12);
  // Every other column: unit stride in neither direction, so the kernel copies.
  Tensor every_other = raw::slice(x, 1, 0, 8, 2);  // (6, 4), strides (8, 2)
  Tensor w = rand_f64({4, 3}, 9);
  check_close(values(mm(every_other, w)), naive_mm(every_other.contiguous(), w), 1e-12);
  // A broadcast row (row stride 0).
  Tensor row = rand_f64({1, 6}, 10).expand({4, 6});
  check_close(values(mm(row, x)), naive_mm(row.contiguous(), x), 1e-12);
  // Single-row and single-column views with odd strides.
  Tensor col = x.select(1, 3).unsqueeze(1);  // (6, 1), stride 8
  check_close(values(mm(y, col)), naive_mm(y, col.contiguous()), 1e-12);
}

TEST_CASE("matmul follows PyTorch's shape rules for every rank combination") {
  Tensor v = rand_f64({4}, 11), w = rand_f64({4}, 12);
  Tensor m = rand_f64({3, 4}, 13), n = rand_f64({4, 5}, 14);
  Tensor batch_a = rand_f64({2, 3, 4}, 15), batch_b = rand_f64({2, 4, 5}, 16);

  SUBCASE("1-D @ 1-D is a dot product") {
    Tensor d = matmul(v, w);
    CHECK(d.dim() == 0);
    std::vector<double> vv = values(v), wv = values(w);
    double dot = 0.0;
    for (size_t i = 0; i < vv.size(); ++i) dot += vv[i] * wv[i];
    CHECK(d.item<double>() == doctest::Approx(dot).epsilon(1e-12));
  }
  SUBCASE("1-D @ 2-D and 2-D @ 1-D drop the added dimension") {
    Tensor vn = matmul(v, n);
    CHECK(vn.sizes() == Shape{5});
    check_close(values(vn), naive_mm(values(v), values(n), 1, 4, 5), 1e-12);
    Tensor mv = matmul(m, v);
    CHECK(mv.sizes() == Shape{3});
    check_close(values(mv), naive_mm(values(m), values(v), 3, 4, 1), 1e-12);
  }
  SUBCASE("2-D @ 2-D is mm") { check_close(values(matmul(m, n)), naive_mm(m, n), 1e-12); }
  SUBCASE("batched @ matrix, matrix @ batched, batched @ batched") {
    Tensor bn = matmul(batch_a, n);
    Tensor mb = matmul(m, batch_b);
    Tensor bb = matmul(batch_a, batch_b);
    CHECK(bn.sizes() == Shape{2, 3, 5});
    CHECK(mb.sizes() == Shape{2, 3, 5});
    CHECK(bb.sizes() == Shape{2, 3, 5});
    for (int64_t i = 0; i < 2; ++i) {
      check_close(values(bn.select(0, i)), naive_mm(batch_a.select(0, i), n), 1e-12);
      check_close(values(mb.select(0, i)), naive_mm(m, batch_b.select(0, i)), 1e-12);
      check_close(values(bb.select(0, i)), naive_mm(batch_a.select(0, i), batch_b.select(0, i)), 1e-12);
    }
  }
  SUBCASE("vector @ batched and batched @ vector") {
    Tensor vb = matmul(v, batch_b);
    CHECK(vb.sizes() == Shape{2, 5});
    Tensor bv = matmul(batch_a, v);
    CHECK(bv.sizes() == Shape{2, 3});
    for (int64_t i = 0; i < 2; ++i) {
      check_close(values(vb.select(0, i)), naive_mm(values(v), values(batch_b.select(0, i)), 1, 4, 5), 1e-12);
      check_close(values(bv.select(0, i)), naive_mm(values(batch_a.select(0, i)), values(v), 3, 4, 1), 1e-12);
    }
  }
  SUBCASE("batch dimensions broadcast") {
    Tensor a = rand_f64({2, 1, 3, 4}, 17), b = rand_f64({3, 4, 5}, 18);
    Tensor c = matmul(a, b);
    CHECK(c.sizes() == Shape{2, 3, 3, 5});
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        check_close(values(c.select(0, i).select(0, j)), naive_mm(a.select(0, i).select(0, 0), b.select(0, j)), 1e-12);
      }
    }
  }
  SUBCASE("a permuted batch folded into the rows of one GEMM") {
    Tensor a = rand_f64({3, 2, 4}, 19).permute({1, 0, 2});  // (2, 3, 4), not viewable as (6, 4)
    Tensor c = matmul(a, n);
    for (int64_t i = 0; i < 2; ++i) check_close(values(c.select(0, i)), naive_mm(a.select(0, i), n), 1e-12);
  }
  SUBCASE("transposed batches are read in place") {
    Tensor at = rand_f64({2, 4, 3}, 20).transpose(1, 2);  // (2, 3, 4)
    Tensor bt = rand_f64({2, 5, 4}, 21).transpose(1, 2);  // (2, 4, 5)
    Tensor c = matmul(at, bt);
    for (int64_t i = 0; i < 2; ++i) {
      check_close(values(c.select(0, i)), naive_mm(at.select(0, i).contiguous(), bt.select(0, i).contiguous()), 1e-12);
    }
  }
}

TEST_CASE("bmm multiplies matching batches") {
  Tensor a = rand_f64({3, 2, 5}, 22), b = rand_f64({3, 5, 4}, 23);
  Tensor c = bmm(a, b);
  CHECK(c.sizes() == Shape{3, 2, 4});
  for (int64_t i = 0; i < 3; ++i) check_close(values(c.select(0, i)), naive_mm(a.select(0, i), b.select(0, i)), 1e-12);
  std::string msg = error_of<ShapeError>([] { bmm(zeros({2, 3, 4}), zeros({3, 4, 5})); });
  CHECK(contains(msg, "bmm"));
  CHECK(contains(msg, "batch sizes 2 and 3"));
  CHECK_THROWS_AS(bmm(zeros({3, 4}), zeros({4, 5})), ShapeError);
}

TEST_CASE("batched products agree with and without intra-op threads") {
  Tensor a = rand_f64({5, 7, 9}, 24), b = rand_f64({9, 6}, 25), c = rand_f64({5, 9, 6}, 26);
  int before = get_num_threads();
  set_num_threads(1);
  std::vector<double> folded_1 = values(matmul(a, b)), batched_1 = values(matmul(a, c));
  Tensor half_1 = matmul(a.to(DType::bf16), c.to(DType::bf16));
  set_num_threads(2);
  CHECK(values(matmul(a, b)) == folded_1);
  CHECK(values(matmul(a, c)) == batched_1);
  CHECK(values(matmul(a.to(DType::bf16), c.to(DType::bf16))) == values(half_1));
  set_num_threads(before);
  for (int64_t i = 0; i < 5; ++i) {
    check_close(std::vector<double>(batched_1.begin() + i * 42, batched_1.begin() + (i + 1) * 42),
                naive_mm(a.select(0, i), c.select(0, i)), 1e-12);
  }
}

TEST_CASE("addmm scales and adds a broadcast bias; beta = 0 ignores the bias") {
  Tensor a = rand_f64({3, 4}, 27), b = rand_f64({4, 2}, 28);
  std::vector<double> prod = naive_mm(a, b);
  for (Shape bias_shape : {Shape{2}, Shape{3, 1}, Shape{3, 2}, Shape{}}) {
    Tensor bias = rand_f64(bias_shape, 29);
    Tensor out = addmm(bias, a, b, 0.5, 2.0);
    std::vector<double> bias_full = values(bias.expand({3, 2}).contiguous());
    std::vector<double> want(6);
    for (size_t i = 0; i < 6; ++i) want[i] = 0.5 * bias_full[i] + 2.0 * prod[i];
    check_close(values(out), want, 1e-12);
  }
  Tensor nan_bias = full({2}, std::numeric_limits<double>::quiet_NaN(), {.dtype = DType::f64});
  check_close(values(addmm(nan_bias, a, b, 0, 1)), prod, 1e-12);
  // Integer addmm takes integer scales.
  Tensor ia = small_ints({2, 3}, 30, DType::i64), ib = small_ints({3, 2}, 31, DType::i64);
  Tensor ibias = small_ints({2}, 32, DType::i64);
  std::vector<double> iprod = naive_mm(ia, ib), ib_v = values(ibias), iwant(4);
  for (size_t i = 0; i < 4; ++i) iwant[i] = 2 * ib_v[i % 2] + 3 * iprod[i];
  CHECK(values(addmm(ibias, ia, ib, 2, 3)) == iwant);
  std::string msg = error_of<ValueError>([&] { addmm(ibias, ia, ib, 1, 0.5); });
  CHECK(contains(msg, "alpha"));
  CHECK(contains(msg, "int64"));
  msg = error_of<ShapeError>([&] { addmm(zeros({4}, {.dtype = DType::f64}), a, b); });
  CHECK(contains(msg, "bias"));
  CHECK(contains(msg, "[4]"));
  CHECK(contains(msg, "[3, 2]"));
}

TEST_CASE("linear is input @ weight^T + bias over any leading dimensions") {
  Tensor weight = rand_f64({5, 4}, 33), bias = rand_f64({5}, 34);
  Tensor weight_t = weight.t().contiguous();
  std::vector<double> bias_v = values(bias);
  for (Shape input_shape : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}}) {
    Tensor input = rand_f64(input_shape, 35);
    Shape out_shape = input_shape;
    out_shape.back() = 5;
    int64_t rows = input.numel() / 4;
    std::vector<double> want = naive_mm(values(input), values(weight_t), rows, 4, 5);
    Tensor no_bias = linear(input, weight);
    CHECK(no_bias.sizes() == out_shape);
    check_close(values(no_bias), want, 1e-12);
    for (size_t i = 0; i < want.size(); ++i) want[i] += bias_v[i % 5];
    Tensor with_bias = linear(input, weight, bias);
    CHECK(with_bias.sizes() == out_shape);
    check_close(values(with_bias), want, 1e-12);
  }
  CHECK(linear(ones({2, 4}), ones({5, 4}), ones({5})).dtype() == DType::f32);
  std::string msg = error_of<ShapeError>([] { linear(zeros({3, 7}), zeros({5, 8})); });
  CHECK(contains(msg, "linear"));
  CHECK(contains(msg, "[3, 7]"));
  CHECK(contains(msg, "[5, 8]"));
  msg = error_of<ShapeError>([] { linear(zeros({3, 8}), zeros({5, 8}), zeros({4})); });
  CHECK(contains(msg, "bias"));
  CHECK(contains(msg, "[4]"));
  CHECK_THROWS_AS(linear(zeros({3, 8}), zeros({8})), ShapeError);
}

TEST_CASE("empty products: K = 0 gives zeros (or beta * bias), M = 0 gives an empty result") {
  Tensor k0 = mm(zeros({3, 0}), zeros({0, 2}));
  CHECK(k0.sizes() == Shape{3, 2});
  CHECK(values(k0) == std::vector<double>(6, 0.0));
  CHECK(values(addmm(full({2}, 3.0f), zeros({3, 0}), zeros({0, 2}), 2, 1)) == std::vector<double>(6, 6.0));
  CHECK(mm(zeros({0, 4}), zeros({4, 2})).sizes() == Shape{0, 2});
  CHECK(matmul(zeros({2, 0, 3}), zeros({3, 4})).sizes() == Shape{2, 0, 4});
  Tensor folded_k0 = matmul(zeros({2, 3, 0}), zeros({0, 4}));
  CHECK(folded_k0.sizes() == Shape{2, 3, 4});
  CHECK(values(folded_k0) == std::vector<double>(24, 0.0));
  CHECK(values(linear(zeros({2, 0}), zeros({3, 0}), full({3}, 1.5f))) == std::vector<double>(6, 1.5));
}

TEST_CASE("shape, dtype and rank errors name the op, both shapes and the values") {
  std::string msg = error_of<ShapeError>([] { mm(zeros({2, 3}), zeros({4, 5})); });
  CHECK(contains(msg, "mm: [2, 3] @ [4, 5]: inner dimensions 3 and 4 differ"));
  msg = error_of<ShapeError>([] { mm(zeros({2, 3, 4}), zeros({4, 5})); });
  CHECK(contains(msg, "2-D"));
  CHECK(contains(msg, "[2, 3, 4]"));
  msg = error_of<ShapeError>([] { matmul(zeros({3}), zeros({4})); });
  CHECK(contains(msg, "matmul: [3] @ [4]: inner dimensions 3 and 4 differ"));
  msg = error_of<ShapeError>([] { matmul(zeros({2, 3, 4}), zeros({3, 4, 5})); });
  CHECK(contains(msg, "matmul"));
  CHECK(contains(msg, "batch dimensions [2] and [3]"));
  msg = error_of<ShapeError>([] { matmul(scalar_tensor(1.0f), zeros({3})); });
  CHECK(contains(msg, "at least one dimension"));
  msg = error_of<DTypeError>([] { mm(zeros({2, 2}), zeros({2, 2}, {.dtype = DType::f64})); });
  CHECK(contains(msg, "mm"));
  CHECK(contains(msg, "float32"));
  CHECK(contains(msg, "float64"));
  CHECK_THROWS_AS(linear(zeros({2, 2}), zeros({2, 2}, {.dtype = DType::f64})), DTypeError);
  CHECK_THROWS_AS(addmm(zeros({2}, {.dtype = DType::f64}), zeros({2, 2}), zeros({2, 2})), DTypeError);
}

TEST_CASE("products record autograd history only when an input requires grad") {
  Tensor a = rand_f64({2, 3}, 36), b = rand_f64({3, 4}, 37);
  CHECK_FALSE(mm(a, b).requires_grad());
  b.requires_grad_(true);
  Tensor c = matmul(a, b);
  CHECK(c.requires_grad());
  CHECK(std::string(c.grad_fn()->name()) == "MatmulBackward");
  c.backward(ones_like(c));
  // d(sum(a @ b))/db = a^T @ ones.
  check_close(values(b.grad()), naive_mm(a.t().contiguous(), ones({2, 4}, {.dtype = DType::f64})), 1e-12);
  CHECK_FALSE(a.grad().defined());
}
