// Behaviour of batch_norm, layer_norm, dropout and embedding: values against references computed here in
// double, running-stat updates, eval vs training, dtypes, non-contiguous inputs, randomness properties and
// every error.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tol) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tol).scale(1.0));
  }
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception of the requested type");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Batch norm in double over a row-major (N, C, L) buffer with the given (or batch) statistics.
struct BatchNormReference {
  std::vector<double> out, mean, biased_var, unbiased_var;
};

BatchNormReference batch_norm_reference(const std::vector<double>& x, int64_t n, int64_t c, int64_t l,
                                        const std::vector<double>& w, const std::vector<double>& b, double eps,
                                        const std::vector<double>* use_mean = nullptr,
                                        const std::vector<double>* use_var = nullptr) {
  BatchNormReference r;
  r.out.resize(x.size());
  r.mean.assign(c, 0);
  r.biased_var.assign(c, 0);
  r.unbiased_var.assign(c, 0);
  const double count = static_cast<double>(n * l);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t i = 0; i < l; ++i) r.mean[ch] += x[(s * c + ch) * l + i] / count;
    }
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t i = 0; i < l; ++i) {
        double d = x[(s * c + ch) * l + i] - r.mean[ch];
        r.biased_var[ch] += d * d / count;
      }
    }
    r.unbiased_var[ch] = r.biased_var[ch] * count / (count - 1);
    double m = use_mean ? (*use_mean)[ch] : r.mean[ch];
    double v = use_var ? (*use_var)[ch] : r.biased_var[ch];
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t i = 0; i < l; ++i) {
        size_t k = static_cast<size_t>((s * c + ch) * l + i);
        r.out[k] = (x[k] - m) / std::sqrt(v + eps) * (w.empty() ? 1.0 : w[ch]) + (b.empty() ? 0.0 : b[ch]);
      }
    }
  }
  return r;
}

// Layer norm in double over a row-major (M, K) buffer.
std::vector<double> layer_norm_reference(const std::vector<double>& x, int64_t m, int64_t k,
                                         const std::vector<double>& w, const std::vector<double>& b, double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < m; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < k; ++i) mean += x[r * k + i] / static_cast<double>(k);
    for (int64_t i = 0; i < k; ++i) var += (x[r * k + i] - mean) * (x[r * k + i] - mean) / static_cast<double>(k);
    for (int64_t i = 0; i < k; ++i) {
      out[r * k + i] = (x[r * k + i] - mean) / std::sqrt(var + eps) * (w.empty() ? 1.0 : w[i]) + (b.empty() ? 0.0 : b[i]);
    }
  }
  return out;
}

Tensor random_f64(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, {.dtype = DType::f64}, &gen);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// batch_norm

TEST_CASE("batch_norm training on (N, C): hand-computed output and running-stat update") {
  // Channel 0: 1, 2, 3, 4 (mean 2.5, biased var 1.25, unbiased 5/3); channel 1: 0, 0, 2, 2 (mean 1, var 1, 4/3).
  Tensor x = from_vector(std::vector<double>{1, 0, 2, 0, 3, 2, 4, 2}, {4, 2});
  Tensor running_mean = zeros({2}, {.dtype = DType::f64});
  Tensor running_var = ones({2}, {.dtype = DType::f64});
  Tensor w = tensor({2.0, 1.0});
  Tensor b = tensor({0.5, -1.0});
  Tensor y = batch_norm(x, running_mean, running_var, w, b, true, 0.1, 0.0);
  const double s0 = 1 / std::sqrt(1.25);
  check_close(values(y), {2 * -1.5 * s0 + 0.5, -2.0, 2 * -0.5 * s0 + 0.5, -2.0, 2 * 0.5 * s0 + 0.5, 0.0,
                          2 * 1.5 * s0 + 0.5, 0.0},
              1e-12);
  check_close(values(running_mean), {0.25, 0.1}, 1e-12);
  check_close(values(running_var), {0.9 + 0.1 * 5.0 / 3.0, 0.9 + 0.1 * 4.0 / 3.0}, 1e-12);
  // A second step blends again: running = 0.9 * running + 0.1 * batch.
  batch_norm(x, running_mean, running_var, w, b, true, 0.1, 0.0);
  check_close(values(running_mean), {0.9 * 0.25 + 0.25, 0.9 * 0.1 + 0.1}, 1e-12);
}

TEST_CASE("batch_norm training on (N, C, H, W) float32 against a double reference, momentum and eps") {
  const int64_t n = 3, c = 4, l = 5 * 2;
  Tensor x64 = random_f64({n, c, 5, 2}, 3);
  Tensor w64 = random_f64({c}, 4), b64 = random_f64({c}, 5);
  Tensor running_mean = zeros({c}), running_var = ones({c});
  Tensor y = batch_norm(raw::to(x64, DType::f32), running_mean, running_var, raw::to(w64, DType::f32),
                        raw::to(b64, DType::f32), true, 0.3, 1e-3);
  CHECK(y.dtype() == DType::f32);
  CHECK(y.sizes() == Shape{n, c, 5, 2});
  BatchNormReference ref = batch_norm_reference(values(x64), n, c, l, values(w64), values(b64), 1e-3);
  check_close(values(y), ref.out, 1e-5);
  std::vector<double> expected_mean, expected_var;
  for (int64_t ch = 0; ch < c; ++ch) {
    expected_mean.push_back(0.3 * ref.mean[ch]);
    expected_var.push_back(0.7 + 0.3 * ref.unbiased_var[ch]);
  }
  check_close(values(running_mean), expected_mean, 1e-5);
  check_close(values(running_var), expected_var, 1e-5);
}

TEST_CASE("batch_norm without affine or running stats, and on a non-contiguous input") {
  Tensor base = random_f64({3, 2, 4}, 7);              // (C, N, L) storage order
  Tensor x = raw::permute(base, {1, 0, 2});            // (N, C, L) view, not contiguous
  REQUIRE_FALSE(x.is_contiguous());
  Tensor y = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  BatchNormReference ref = batch_norm_reference(values(raw::contiguous(x)), 2, 3, 4, {}, {}, 1e-5);
  check_close(values(y), ref.out, 1e-10);
}

TEST_CASE("batch_norm eval uses the running stats and leaves them unchanged; training differs") {
  Tensor x = random_f64({4, 3, 2}, 11);
  Tensor running_mean = tensor({0.5, -1.0, 2.0});
  Tensor running_var = tensor({4.0, 0.25, 1.0});
  Tensor w = tensor({1.5, 2.0, -1.0}), b = tensor({0.0, 1.0, 0.5});
  std::vector<double> rm = values(running_mean), rv = values(running_var);
  Tensor y = batch_norm(x, running_mean, running_var, w, b, false);
  BatchNormReference ref = batch_norm_reference(values(x), 4, 3, 2, values(w), values(b), 1e-5, &rm, &rv);
  check_close(values(y), ref.out, 1e-12);
  CHECK(values(running_mean) == rm);
  CHECK(values(running_var) == rv);
  Tensor y_train = batch_norm(x, running_mean, running_var, w, b, true);
  CHECK(std::abs(values(y_train)[0] - values(y)[0]) > 1e-3);
  CHECK(values(running_mean) != rm);
}

TEST_CASE("batch_norm in float16 and bfloat16 computes in float32") {
  Tensor x64 = random_f64({8, 3}, 13);
  BatchNormReference ref = batch_norm_reference(values(x64), 8, 3, 1, {}, {}, 1e-5);
  for (DType dt : {DType::f16, DType::bf16}) {
    INFO(dtype_name(dt));
    Tensor running_mean = zeros({3}), running_var = ones({3});  // float32 stats with a half input
    Tensor y = batch_norm(raw::to(x64, dt), running_mean, running_var, Tensor(), Tensor(), true);
    CHECK(y.dtype() == dt);
    check_close(values(y), ref.out, dt == DType::f16 ? 1e-2 : 4e-2);
    CHECK(values(running_mean)[0] == doctest::Approx(0.1 * ref.mean[0]).epsilon(2e-2).scale(1.0));
  }
}

TEST_CASE("batch_norm backward in float32 matches float64, in training and eval") {
  for (bool training : {true, false}) {
    INFO("training " << training);
    Tensor x64 = random_f64({5, 3, 4}, 17), w64 = random_f64({3}, 18), b64 = random_f64({3}, 19);
    Tensor g64 = random_f64({5, 3, 4}, 20);
    Tensor rm = tensor({0.1, 0.2, -0.3}), rv = tensor({1.5, 0.5, 2.0});
    std::vector<std::vector<double>> grads[2];
    for (DType dt : {DType::f64, DType::f32}) {
      Tensor x = raw::to(x64, dt).requires_grad_(), w = raw::to(w64, dt).requires_grad_();
      Tensor b = raw::to(b64, dt).requires_grad_();
      Tensor y = batch_norm(x, raw::clone(rm), raw::clone(rv), w, b, training);
      y.backward(raw::to(g64, dt));
      grads[dt == DType::f32].push_back(values(x.grad()));
      grads[dt == DType::f32].push_back(values(w.grad()));
      grads[dt == DType::f32].push_back(values(b.grad()));
      CHECK(x.grad().dtype() == dt);
    }
    for (size_t i = 0; i < 3; ++i) check_close(grads[1][i], grads[0][i], 1e-4);
  }
}

TEST_CASE("batch_norm errors name the op, the values and a hint") {
  Tensor x = zeros({4, 3});
  std::string msg = error_of<ShapeError>([&] { batch_norm(zeros({3}), Tensor(), Tensor(), Tensor(), Tensor(), true); });
  CHECK(contains(msg, "batch_norm"));
  CHECK(contains(msg, "[3]"));
  msg = error_of<ShapeError>([&] { batch_norm(x, Tensor(), Tensor(), zeros({4}), Tensor(), true); });
  CHECK(contains(msg, "weight"));
  CHECK(contains(msg, "[4]"));
  CHECK(contains(msg, "[3]"));
  msg = error_of<ValueError>([&] { batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false); });
  CHECK(contains(msg, "running_mean"));
  msg = error_of<ValueError>([&] { batch_norm(x, zeros({3}), Tensor(), Tensor(), Tensor(), true); });
  CHECK(contains(msg, "running_var"));
  msg = error_of<ValueError>([&] { batch_norm(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true); });
  CHECK(contains(msg, "more than 1 value per channel"));
  CHECK(contains(msg, "[1, 3]"));
  msg = error_of<DTypeError>([&] { batch_norm(zeros({4, 3}, {.dtype = DType::i64}), Tensor(), Tensor(), Tensor(), Tensor(), true); });
  CHECK(contains(msg, "int64"));
  msg = error_of<DTypeError>([&] { batch_norm(x, Tensor(), Tensor(), zeros({3}, {.dtype = DType::i32}), Tensor(), true); });
  CHECK(contains(msg, "weight"));
}

TEST_CASE("batch_norm and layer_norm split over threads give the single-thread result and match the reference") {
  // Big enough that the kernels split channels / rows / features into several chunks.
  Tensor x = raw::to(random_f64({8, 6, 40, 40}, 37), DType::f32);
  Tensor g = raw::to(random_f64({8, 6, 40, 40}, 38), DType::f32);
  struct Run {
    std::vector<double> bn_out, bn_grad_input, bn_grad_weight, bn_grad_bias, ln_out, ln_grad_input, ln_grad_weight;
  };
  int saved_threads = get_num_threads();
  Run runs[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Run& run = runs[threads - 1];
    Tensor xb = raw::clone(x).requires_grad_(), w = ones({6}).requires_grad_(), b = zeros({6}).requires_grad_();
    Tensor yb = batch_norm(xb, Tensor(), Tensor(), w, b, true);
    yb.backward(g);
    Tensor xl = raw::clone(x).requires_grad_(), wl = ones({40}).requires_grad_();
    Tensor yl = layer_norm(xl, {40}, wl);
    yl.backward(g);
    run = {values(yb), values(xb.grad()), values(w.grad()), values(b.grad()),
           values(yl), values(xl.grad()), values(wl.grad())};
  }
  set_num_threads(saved_threads);
  CHECK(runs[0].bn_out == runs[1].bn_out);
  CHECK(runs[0].bn_grad_input == runs[1].bn_grad_input);
  CHECK(runs[0].bn_grad_weight == runs[1].bn_grad_weight);
  CHECK(runs[0].bn_grad_bias == runs[1].bn_grad_bias);
  CHECK(runs[0].ln_out == runs[1].ln_out);
  CHECK(runs[0].ln_grad_input == runs[1].ln_grad_input);
  CHECK(runs[0].ln_grad_weight == runs[1].ln_grad_weight);
  check_close(runs[1].bn_out, batch_norm_reference(values(x), 8, 6, 1600, {}, {}, 1e-5).out, 1e-5);
  check_close(runs[1].ln_out, layer_norm_reference(values(x), 8 * 6 * 40, 40, {}, {}, 1e-5), 1e-5);
  check_close(runs[1].bn_grad_bias, values(raw::sum(g, {0, 2, 3})), 1e-5);
}

// ---------------------------------------------------------------------------------------------------------
// layer_norm

TEST_CASE("layer_norm over one and two trailing dims against a double reference") {
  Tensor x = random_f64({2, 3, 4}, 23);
  Tensor w = random_f64({4}, 24), b = random_f64({4}, 25);
  check_close(values(layer_norm(x, {4}, w, b)), layer_norm_reference(values(x), 6, 4, values(w), values(b), 1e-5),
              1e-12);
  Tensor w2 = random_f64({3, 4}, 26), b2 = random_f64({3, 4}, 27);
  Tensor y = layer_norm(x, {3, 4}, w2, b2, 1e-3);
  CHECK(y.sizes() == Shape{2, 3, 4});
  check_close(values(y), layer_norm_reference(values(x), 2, 12, values(w2), values(b2), 1e-3), 1e-12);
  // Hand-computed row: 1, 2, 3, 4 -> mean 2.5, var 1.25.
  Tensor row = tensor({1.0, 2.0, 3.0, 4.0});
  const double s = 1 / std::sqrt(1.25);
  check_close(values(layer_norm(row, {4}, Tensor(), Tensor(), 0.0)), {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-12);
}

TEST_CASE("layer_norm on a non-contiguous input, without affine, in every floating dtype") {
  Tensor base = random_f64({5, 6}, 29);
  Tensor x = raw::transpose(base, 0, 1);  // (6, 5), not contiguous
  std::vector<double> ref = layer_norm_reference(values(raw::contiguous(x)), 6, 5, {}, {}, 1e-5);
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    INFO(dtype_name(dt));
    Tensor y = layer_norm(raw::to(x, dt), {5});
    CHECK(y.dtype() == dt);
    double tol = dt == DType::f64 ? 1e-12 : (dt == DType::f32 ? 1e-5 : (dt == DType::f16 ? 1e-2 : 4e-2));
    check_close(values(y), ref, tol);
  }
}

TEST_CASE("layer_norm backward in float32 matches float64") {
  Tensor x64 = random_f64({4, 6}, 31), w64 = random_f64({6}, 32), b64 = random_f64({6}, 33);
  Tensor g64 = random_f64({4, 6}, 34);
  std::vector<std::vector<double>> grads[2];
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor x = raw::to(x64, dt).requires_grad_(), w = raw::to(w64, dt).requires_grad_();
    Tensor b = raw::to(b64, dt).requires_grad_();
    layer_norm(x, {6}, w, b).backward(raw::to(g64, dt));
    grads[dt == DType::f32] = {values(x.grad()), values(w.grad()), values(b.grad())};
  }
  for (size_t i = 0; i < 3; ++i) check_close(grads[1][i], grads[0][i], 1e-4);
}

TEST_CASE("layer_norm gradients over several blocks of rows and a tail: the same bits on 1-3 threads, the reference") {
  // 1000 rows: 15 full blocks of 64 and a partial one; 37 features: four vectors of 8 and a scalar tail.
  const int64_t rows = 1000, k = 37;
  Tensor x64 = random_f64({rows, k}, 41), g64 = random_f64({rows, k}, 42), w64 = random_f64({k}, 43);
  const std::vector<double> xs = values(x64), gs = values(g64);
  std::vector<double> ref_gw(k, 0.0), ref_gb(k, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < k; ++i) mean += xs[r * k + i] / k;
    for (int64_t i = 0; i < k; ++i) var += (xs[r * k + i] - mean) * (xs[r * k + i] - mean) / k;
    const double rstd = 1 / std::sqrt(var + 1e-5);
    for (int64_t i = 0; i < k; ++i) {
      ref_gw[i] += gs[r * k + i] * (xs[r * k + i] - mean) * rstd;
      ref_gb[i] += gs[r * k + i];
    }
  }
  const int saved_threads = get_num_threads();
  for (bool input_grad : {false, true}) {  // the parameters' pass alone, and with the input gradient
    INFO("input gradient " << input_grad);
    std::vector<double> grads[3][3];
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      Tensor x = raw::to(x64, DType::f32).requires_grad_(input_grad), w = raw::to(w64, DType::f32).requires_grad_();
      Tensor b = zeros({k}).requires_grad_();
      layer_norm(x, {k}, w, b).backward(raw::to(g64, DType::f32));
      grads[threads - 1][0] = values(w.grad());
      grads[threads - 1][1] = values(b.grad());
      if (input_grad) grads[threads - 1][2] = values(x.grad());
    }
    for (int t : {1, 2}) {
      for (int i : {0, 1, 2}) CHECK(grads[0][i] == grads[t][i]);
    }
    check_close(grads[1][0], ref_gw, 1e-5);
    check_close(grads[1][1], ref_gb, 1e-5);
  }
  set_num_threads(saved_threads);
}

TEST_CASE("layer_norm errors") {
  Tensor x = zeros({2, 3, 4});
  std::string msg = error_of<ShapeError>([&] { layer_norm(x, {3}); });
  CHECK(contains(msg, "layer_norm"));
  CHECK(contains(msg, "[3]"));
  CHECK(contains(msg, "[2, 3, 4]"));
  CHECK_THROWS_AS(layer_norm(x, {1, 2, 3, 4}), ShapeError);
  msg = error_of<ShapeError>([&] { layer_norm(x, {4}, zeros({3})); });
  CHECK(contains(msg, "weight"));
  msg = error_of<ValueError>([&] { layer_norm(x, {}); });
  CHECK(contains(msg, "normalized_shape"));
  msg = error_of<DTypeError>([&] { layer_norm(zeros({2, 3}, {.dtype = DType::i64}), {3}); });
  CHECK(contains(msg, "int64"));
}

// ---------------------------------------------------------------------------------------------------------
// dropout

TEST_CASE("dropout keeps about 1 - p of the elements and scales them by 1 / (1 - p)") {
  const int64_t n = 200000;
  Tensor x = full({n}, 2.0f);
  for (double p : {0.1, 0.5, 0.8}) {
    INFO("p = " << p);
    Generator gen(99);
    Tensor y = dropout(x, p, true, &gen);
    std::vector<float> v = to_vector<float>(y);
    int64_t kept = 0;
    bool values_ok = true;
    for (float e : v) {
      if (e != 0.0f) {
        ++kept;
        values_ok = values_ok && std::abs(e - static_cast<float>(2.0 / (1.0 - p))) < 1e-5f;
      }
    }
    CHECK(values_ok);
    // The kept fraction is binomial: 6 standard deviations at n = 200000 are below 0.007.
    CHECK(std::abs(static_cast<double>(kept) / n - (1 - p)) < 0.007);
    CHECK(gen.offset() == static_cast<uint64_t>(n));
  }
}

TEST_CASE("dropout's mask is rand() >= p for the same generator state, whatever the thread count") {
  Tensor x = random_f64({300, 100}, 41);
  Generator g_ref(5);
  std::vector<double> u = to_vector<double>(rand({300, 100}, {.dtype = DType::f64}, &g_ref));
  int saved_threads = get_num_threads();
  std::vector<double> results[2];
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Generator gen(5);
    results[threads - 1] = values(dropout(x, 0.3, true, &gen));
  }
  set_num_threads(saved_threads);
  CHECK(results[0] == results[1]);
  std::vector<double> xv = values(x);
  bool matches = true;
  for (size_t i = 0; i < u.size(); ++i) {
    double expected = u[i] >= 0.3 ? xv[i] / 0.7 : 0.0;
    matches = matches && std::abs(results[0][i] - expected) < 1e-12;
  }
  CHECK(matches);
}

TEST_CASE("dropout is deterministic for a seed, differs across seeds, and advances the default generator") {
  Tensor x = ones({1000});
  Generator a(1), b(1), c(2);
  CHECK(values(dropout(x, 0.5, true, &a)) == values(dropout(x, 0.5, true, &b)));
  CHECK(values(dropout(x, 0.5, true, &a)) != values(dropout(x, 0.5, true, &c)));
  manual_seed(7);
  std::vector<double> first = values(dropout(x, 0.5));
  std::vector<double> second = values(dropout(x, 0.5));
  CHECK(first != second);
  manual_seed(7);
  CHECK(values(dropout(x, 0.5)) == first);
}

TEST_CASE("dropout edge cases: p = 0 and eval return the input, p = 1 gives zeros, half types, non-contiguous") {
  Tensor x = random_f64({4, 5}, 43);
  CHECK(dropout(x, 0.0).is_same(x));
  CHECK(dropout(x, 0.7, false).is_same(x));
  Tensor zero = dropout(x, 1.0);
  CHECK(values(zero) == std::vector<double>(20, 0.0));
  Tensor xt = raw::transpose(x, 0, 1);
  Generator g1(3), g2(3);
  CHECK(values(dropout(xt, 0.5, true, &g1)) == values(dropout(raw::contiguous(xt), 0.5, true, &g2)));
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    Generator g3(3), g4(3);
    Tensor y = dropout(raw::to(x, dt), 0.5, true, &g3);
    CHECK(y.dtype() == dt);
    std::vector<double> ref = values(dropout(x, 0.5, true, &g4));
    check_close(values(y), ref, dt == DType::f32 ? 1e-6 : 1e-2);
  }
}

TEST_CASE("dropout backward multiplies by the mask") {
  Tensor x = random_f64({50}, 47).requires_grad_();
  Generator gen(11);
  Tensor y = dropout(x, 0.25, true, &gen);
  y.backward(full({50}, 3.0, {.dtype = DType::f64}));
  std::vector<double> yv = values(y), xv = values(x), gv = values(x.grad());
  for (size_t i = 0; i < yv.size(); ++i) {
    bool kept = yv[i] != 0.0;
    CHECK(gv[i] == doctest::Approx(kept ? 3.0 / 0.75 : 0.0));
    if (kept) CHECK(yv[i] == doctest::Approx(xv[i] / 0.75));
  }
}

TEST_CASE("dropout errors") {
  for (double p : {-0.1, 1.5, std::nan("")}) {
    std::string msg = error_of<ValueError>([&] { dropout(ones({3}), p); });
    CHECK(contains(msg, "dropout"));
    CHECK(contains(msg, "[0, 1]"));
  }
  CHECK_THROWS_AS(dropout(ones({3}), 2.0, false), ValueError);
  std::string msg = error_of<DTypeError>([&] { dropout(arange(4), 0.5); });
  CHECK(contains(msg, "int64"));
}

// ---------------------------------------------------------------------------------------------------------
// embedding

TEST_CASE("embedding looks up rows for i64 and i32 indices of any shape") {
  Tensor w = arange(0, 15, 1, {.dtype = DType::f32}).reshape({5, 3});
  Tensor idx = tensor({4, 0, 2, 2}).reshape({2, 2});
  Tensor y = embedding(w, idx);
  CHECK(y.sizes() == Shape{2, 2, 3});
  CHECK(to_vector<float>(y) == std::vector<float>{12, 13, 14, 0, 1, 2, 6, 7, 8, 6, 7, 8});
  Tensor y32 = embedding(w, raw::to(idx, DType::i32));
  CHECK(to_vector<float>(y32) == to_vector<float>(y));
  Tensor scalar_index = scalar_tensor(int64_t{1}, DType::i64, kCPU);
  CHECK(embedding(w, scalar_index).sizes() == Shape{3});
  // A non-contiguous weight and indices.
  Tensor wt = raw::transpose(arange(0, 15, 1, {.dtype = DType::f64}).reshape({3, 5}), 0, 1);  // (5, 3)
  Tensor idx_t = raw::transpose(tensor({0, 1, 2, 3}).reshape({2, 2}), 0, 1);                  // [[0, 2], [1, 3]]
  CHECK(values(embedding(wt, idx_t)) == std::vector<double>{0, 5, 10, 2, 7, 12, 1, 6, 11, 3, 8, 13});
  // Integer weights are looked up too.
  CHECK(to_vector<int64_t>(embedding(arange(6).reshape({3, 2}), tensor({2}))) == std::vector<int64_t>{4, 5});
}

TEST_CASE("embedding backward adds rows for repeated indices and skips padding_idx") {
  Tensor w = zeros({4, 2}, {.dtype = DType::f64}).requires_grad_();
  Tensor idx = tensor({1, 3, 1, 0});
  Tensor g = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  embedding(w, idx).backward(g);
  CHECK(values(w.grad()) == std::vector<double>{7, 8, 6, 8, 0, 0, 3, 4});
  Tensor w2 = zeros({4, 2}, {.dtype = DType::f64}).requires_grad_();
  embedding(w2, idx, 1).backward(g);
  CHECK(values(w2.grad()) == std::vector<double>{7, 8, 0, 0, 0, 0, 3, 4});
  Tensor w3 = zeros({4, 2}, {.dtype = DType::f64}).requires_grad_();
  embedding(w3, idx, -1).backward(g);  // -1 is the last row, 3
  CHECK(values(w3.grad()) == std::vector<double>{7, 8, 6, 8, 0, 0, 0, 0});
  // The padding row is still looked up in the forward.
  Tensor wv = arange(0, 8, 1, {.dtype = DType::f64}).reshape({4, 2});
  CHECK(values(embedding(wv, tensor({1}), 1)) == std::vector<double>{2, 3});
}

TEST_CASE("embedding errors name the index and num_embeddings") {
  Tensor w = zeros({5, 3});
  std::string msg = error_of<IndexError>([&] { embedding(w, tensor({1, 7})); });
  CHECK(contains(msg, "embedding"));
  CHECK(contains(msg, "7"));
  CHECK(contains(msg, "num_embeddings 5"));
  msg = error_of<IndexError>([&] { embedding(w, tensor({-1})); });
  CHECK(contains(msg, "-1"));
  msg = error_of<DTypeError>([&] { embedding(w, tensor({1.0f})); });
  CHECK(contains(msg, "float32"));
  msg = error_of<ShapeError>([&] { embedding(zeros({5}), tensor({1})); });
  CHECK(contains(msg, "[5]"));
  msg = error_of<ValueError>([&] { embedding(w, tensor({1}), 5); });
  CHECK(contains(msg, "padding_idx 5"));
  CHECK_THROWS_AS(embedding(w, tensor({1}), -6), ValueError);
}
