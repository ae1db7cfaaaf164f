// Reductions (sum, mean, max/min, argmax/argmin, var/std, logsumexp) and softmax/log_softmax: values against
// references computed in double in the test, dims/keepdim shapes, dtypes, non-contiguous inputs and errors.
#include <doctest/doctest.h>

#include "tests/check_error.h"

#include <cmath>
#include <limits>

#include "syncgrad.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

// A (2, 3, 4) float64 tensor with distinct values and its host copy.
Tensor cube() { return from_vector(std::vector<double>{3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8, 9, 7, -9, 3, 2, 3,
                                                        8, -4, 6, 2, -6, 4},
                                   {2, 3, 4}); }

double at(const std::vector<double>& v, int64_t i, int64_t j, int64_t k) { return v[(i * 3 + j) * 4 + k]; }


}  // namespace

TEST_CASE("sum over dims lists, negative dims and keepdim") {
  Tensor t = cube();
  std::vector<double> v = to_vector<double>(t);
  Tensor s = sum(t, {0, -1});
  CHECK(s.sizes() == Shape{3});
  std::vector<double> got = to_vector<double>(s);
  for (int64_t j = 0; j < 3; ++j) {
    double ref = 0;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k) ref += at(v, i, j, k);
    CHECK(got[j] == doctest::Approx(ref));
  }
  CHECK(sum(t, {0, 2}, true).sizes() == Shape{1, 3, 1});
  CHECK(sum(t, {1}).sizes() == Shape{2, 4});
  CHECK(sum(t).dim() == 0);
  CHECK(t.sum().item<double>() == doctest::Approx(43));
  CHECK_THROWS_AS(sum(t, {3}), IndexError);
  CHECK_THROWS_AS(sum(t, {1, -2}), ShapeError);
}

TEST_CASE("sum dtype rules: integers to int64, dtype argument, halves accumulate in float") {
  CHECK(sum(arange(10).to(DType::i32)).dtype() == DType::i64);
  CHECK(sum(arange(10).to(DType::i32)).item<int64_t>() == 45);
  CHECK(sum(ones({5}, {.dtype = DType::boolean})).item<int64_t>() == 5);
  Tensor as_double = sum(arange(4), {}, false, DType::f64);
  CHECK(as_double.dtype() == DType::f64);
  CHECK(as_double.item<double>() == 6.0);
  // 4096 halves of 1: a float16 accumulator would stall at 2048.
  Tensor h = sum(ones({4096}, {.dtype = DType::f16}));
  CHECK(h.dtype() == DType::f16);
  CHECK(h.item<float>() == 4096.f);
  CHECK(sum(ones({3000}, {.dtype = DType::bf16})).item<float>() == doctest::Approx(3000).epsilon(0.01));
}

TEST_CASE("sum of a million float32 values is accurate (cascade summation)") {
  Generator gen(7);
  Tensor t = rand({1 << 20}, {}, &gen);
  std::vector<float> v = to_vector<float>(t);
  double ref = 0;
  for (float x : v) ref += x;
  double got = sum(t).item<float>();
  CHECK(std::abs(got - ref) / ref < 1e-6);
  // Reducing the batch dim of a (64, 256) gradient, as for bias gradients.
  Tensor g = randn({64, 256}, {}, &gen);
  std::vector<float> gv = to_vector<float>(g);
  std::vector<float> col = to_vector<float>(sum(g, {0}));
  for (int64_t j = 0; j < 256; j += 37) {
    double r = 0;
    for (int64_t i = 0; i < 64; ++i) r += gv[i * 256 + j];
    CHECK(col[j] == doctest::Approx(r).epsilon(1e-5));
  }
}

TEST_CASE("large sums split over threads give the same bits on 1, 2 and 3 threads, and the double sum") {
  // (64, 40, 100): over the leading dims (a linear layer's bias gradient, rows of 100 columns: one thread) and
  // over dims 0 and 2 (a convolution's bias gradient: its 40 channels split between threads, runs of 100
  // summed).
  Tensor x64 = randn({64, 40, 100}, {.dtype = DType::f64});
  Tensor x = raw::to(x64, DType::f32);
  for (const Shape& dims : {Shape{0, 1}, Shape{0, 2}}) {
    INFO("dims " << shape_str(dims));
    const std::vector<double> expected = to_vector<double>(raw::sum(x64, dims));
    const int saved_threads = get_num_threads();
    std::vector<float> by_threads[3];
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      by_threads[threads - 1] = to_vector<float>(raw::sum(x, dims));
    }
    set_num_threads(saved_threads);
    CHECK(by_threads[0] == by_threads[1]);
    CHECK(by_threads[0] == by_threads[2]);
    REQUIRE(by_threads[1].size() == expected.size());
    for (size_t c = 0; c < expected.size(); ++c) {
      CHECK(by_threads[1][c] == doctest::Approx(expected[c]).epsilon(1e-4));
    }
  }
  // A non-contiguous input (R, D, C) = (400, 3, 200) with strides (C, R C, 1), summed over 0 and 2 on 1 and 3
  // threads: a thread's one-wide share of D would let R and C merge into one longer run, so it stays whole.
  Tensor base = raw::to(randn({3, 400, 200}, {.dtype = DType::f64}), DType::f32);
  Tensor strided = raw::transpose(base, 0, 1);
  const int saved_threads = get_num_threads();
  std::vector<float> sums[2];
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    sums[threads == 3] = to_vector<float>(raw::sum(strided, {0, 2}));
  }
  set_num_threads(saved_threads);
  CHECK(sums[0] == sums[1]);
  // An unsupported accumulator dtype is refused before any thread starts (a throw inside the parallel region
  // would end the process).
  set_num_threads(2);
  check_error([&] { raw::sum(zeros({64, 40, 100}), {0, 2}, false, DType::boolean); }, {"sum", "bool"});
  set_num_threads(saved_threads);
}

TEST_CASE("sum of non-contiguous inputs") {
  Tensor t = cube();
  Tensor p = t.permute({2, 0, 1});  // (4, 2, 3)
  std::vector<double> v = to_vector<double>(t);
  std::vector<double> got = to_vector<double>(sum(p, {1}));  // (4, 3)
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t j = 0; j < 3; ++j) CHECK(got[k * 3 + j] == doctest::Approx(at(v, 0, j, k) + at(v, 1, j, k)));
  Tensor e = tensor({1.0, 2.0}).unsqueeze(1).expand({2, 5});
  CHECK(to_vector<double>(sum(e, {1})) == std::vector<double>{5, 10});
}

TEST_CASE("mean: values, dtype rules, empty reduction") {
  Tensor t = cube();
  std::vector<double> v = to_vector<double>(t);
  std::vector<double> got = to_vector<double>(mean(t, {1}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double ref = (at(v, i, 0, k) + at(v, i, 1, k) + at(v, i, 2, k)) / 3;
      CHECK(got[i * 4 + k] == doctest::Approx(ref));
    }
  CHECK(mean(t, {-1}, true).sizes() == Shape{2, 3, 1});
  CHECK(t.mean().item<double>() == doctest::Approx(43.0 / 24));
  check_error([] { mean(arange(4)); }, {"mean", "int64", "dtype"});
  CHECK_THROWS_AS(mean(arange(4)), DTypeError);
  CHECK(mean(arange(4), {}, false, DType::f32).item<float>() == 1.5f);
  Tensor h = mean(full({1000}, 3.0, {.dtype = DType::bf16}));
  CHECK(h.dtype() == DType::bf16);
  CHECK(h.item<float>() == 3.f);
  CHECK(std::isnan(mean(zeros({0, 3}), {0}).select(0, 1).item<float>()));
}

TEST_CASE("max/min over all elements; ties and empty input") {
  Tensor t = cube();
  CHECK(max(t).item<double>() == 9);
  CHECK(min(t).item<double>() == -9);
  CHECK(max(t).dim() == 0);
  CHECK(max(arange(5).to(DType::i32)).item<int64_t>() == 4);
  CHECK(std::isnan(max(tensor({1.f, NAN, 3.f})).item<float>()));
  check_error([] { max(zeros({2, 0})); }, {"max", "[2, 0]"});
  CHECK_THROWS_AS(min(zeros({0})), ValueError);
}

TEST_CASE("max/min along a dim return values and first indices") {
  Tensor t = cube();
  std::vector<double> v = to_vector<double>(t);
  auto [values, indices] = max(t, 1);
  CHECK(values.sizes() == Shape{2, 4});
  CHECK(indices.dtype() == DType::i64);
  std::vector<double> mv = to_vector<double>(values);
  std::vector<int64_t> mi = to_vector<int64_t>(indices);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      int64_t best = 0;
      for (int64_t j = 1; j < 3; ++j)
        if (at(v, i, j, k) > at(v, i, best, k)) best = j;
      CHECK(mi[i * 4 + k] == best);
      CHECK(mv[i * 4 + k] == at(v, i, best, k));
    }
  // Ties: the first extremum wins, along the last dim and along a middle dim.
  Tensor tied = tensor({2.f, 5.f, 5.f, 1.f, 1.f, 0.f}).reshape({2, 3});
  CHECK(to_vector<int64_t>(max(tied, -1).indices) == std::vector<int64_t>{1, 0});
  CHECK(to_vector<int64_t>(min(tied, 1).indices) == std::vector<int64_t>{0, 2});
  CHECK(to_vector<int64_t>(max(tensor({3.f, 3.f, 1.f, 1.f}).reshape({2, 2}), 0).indices) ==
        std::vector<int64_t>{0, 0});
  CHECK(max(t, 2, true).values.sizes() == Shape{2, 3, 1});
  CHECK(min(t.transpose(0, 2), 0).values.sizes() == Shape{3, 2});
  CHECK(to_vector<double>(min(t.transpose(0, 2), 0).values)[0] == -1);
  auto nan_max = max(tensor({1.f, NAN, 7.f, NAN}), 0);
  CHECK(std::isnan(nan_max.values.item<float>()));
  CHECK(nan_max.indices.item<int64_t>() == 1);
  check_error([] { max(zeros({3, 0}), 1); }, {"max", "size 0", "[3, 0]"});
  CHECK_THROWS_AS(max(zeros({3, 0}), 1), IndexError);
  CHECK(to_vector<float>(max(zeros({0, 3}), 1).values).empty());
}

TEST_CASE("argmax/argmin flattened and along a dim") {
  Tensor t = cube();
  CHECK(argmax(t).item<int64_t>() == 5);
  CHECK(argmin(t).item<int64_t>() == 14);
  CHECK(argmax(t, 1, true).sizes() == Shape{2, 1, 4});
  CHECK(to_vector<int64_t>(argmax(tensor({1.f, 4.f, 4.f, 0.f}).reshape({2, 2}), -1)) == std::vector<int64_t>{1, 0});
  CHECK(to_vector<int64_t>(argmin(arange(6).reshape({2, 3}).to(DType::i32), 0)) == std::vector<int64_t>{0, 0, 0});
  CHECK_THROWS_AS(argmax(zeros({0})), ValueError);
}

TEST_CASE("var/std with correction over dims") {
  Tensor t = cube();
  std::vector<double> v = to_vector<double>(t);
  for (int64_t correction : {0, 1, 2}) {
    std::vector<double> got = to_vector<double>(var(t, {0, 2}, correction));
    std::vector<double> got_std = to_vector<double>(syncgrad::std(t, {0, 2}, correction));
    for (int64_t j = 0; j < 3; ++j) {
      double m = 0;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < 4; ++k) m += at(v, i, j, k) / 8;
      double ss = 0;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t k = 0; k < 4; ++k) ss += (at(v, i, j, k) - m) * (at(v, i, j, k) - m);
      CHECK(got[j] == doctest::Approx(ss / (8 - correction)));
      CHECK(got_std[j] == doctest::Approx(std::sqrt(ss / (8 - correction))));
    }
  }
  CHECK(var(tensor({1.0, 2.0, 3.0, 4.0})).item<double>() == doctest::Approx(5.0 / 3));
  CHECK(var(t, {1}, 1, true).sizes() == Shape{2, 1, 4});
  CHECK(var(t.transpose(1, 2), {-1}).sizes() == Shape{2, 4});
  CHECK(to_vector<double>(var(t.transpose(1, 2), {-1})) == to_vector<double>(var(t, {1})));
  CHECK(syncgrad::std(full({10}, 2.5, {.dtype = DType::f16})).item<float>() == 0.f);
  CHECK(std::isnan(var(tensor({1.0})).item<double>()));  // 0 / 0, as in PyTorch
  check_error([] { var(arange(4)); }, {"var", "int64"});
  CHECK_THROWS_AS(syncgrad::std(arange(4)), DTypeError);
  CHECK_THROWS_AS(var(t, {}, -1), ValueError);
}

TEST_CASE("logsumexp is stable and matches a double reference") {
  Tensor t = cube();
  std::vector<double> v = to_vector<double>(t);
  std::vector<double> got = to_vector<double>(logsumexp(t, {1, 2}));
  for (int64_t i = 0; i < 2; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) s += std::exp(at(v, i, j, k));
    CHECK(got[i] == doctest::Approx(std::log(s)));
  }
  CHECK(logsumexp(t, {0}, true).sizes() == Shape{1, 3, 4});
  Tensor big = tensor({1000.f, 1000.f});
  CHECK(logsumexp(big, {0}).item<float>() == doctest::Approx(1000 + std::log(2.0)));
  Tensor neg = full({3}, -std::numeric_limits<double>::infinity(), {.dtype = DType::f64});
  CHECK(logsumexp(neg, {0}).item<double>() == -std::numeric_limits<double>::infinity());
  CHECK(logsumexp(arange(3), {0}).dtype() == DType::f32);
}

TEST_CASE("softmax and log_softmax along the last and a middle dim") {
  Tensor t = cube();
  std::vector<double> v = to_vector<double>(t);
  for (int64_t dim : {2, 1, 0}) {
    std::vector<double> sm = to_vector<double>(softmax(t, dim));
    std::vector<double> lsm = to_vector<double>(log_softmax(t, dim - 3));
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          int64_t idx[3] = {i, j, k};
          int64_t n = t.sizes()[dim];
          double total = 0;
          for (int64_t r = 0; r < n; ++r) {
            int64_t o[3] = {i, j, k};
            o[dim] = r;
            total += std::exp(at(v, o[0], o[1], o[2]));
          }
          double x = at(v, idx[0], idx[1], idx[2]);
          CHECK(sm[(i * 3 + j) * 4 + k] == doctest::Approx(std::exp(x) / total));
          CHECK(lsm[(i * 3 + j) * 4 + k] == doctest::Approx(x - std::log(total)));
        }
  }
}

TEST_CASE("softmax: large logits, non-contiguous input, dtypes and errors") {
  Tensor big = tensor({1000.f, 0.f, 1000.f});
  CHECK(to_vector<float>(softmax(big, 0)) == std::vector<float>{0.5f, 0.f, 0.5f});
  CHECK(to_vector<float>(log_softmax(big, 0))[1] == doctest::Approx(-1000 - std::log(2.0)));
  Tensor t = cube();
  Tensor tt = t.transpose(1, 2);  // (2, 4, 3), non-contiguous
  std::vector<double> strided = to_vector<double>(softmax(tt, -1));
  std::vector<double> reference = to_vector<double>(softmax(t, 1).transpose(1, 2).contiguous());
  for (size_t i = 0; i < reference.size(); ++i) CHECK(strided[i] == doctest::Approx(reference[i]));
  Tensor h = cube().to(DType::f16);
  std::vector<float> hs = to_vector<float>(softmax(h, -1));
  std::vector<double> ref = to_vector<double>(softmax(cube(), -1));
  for (size_t i = 0; i < ref.size(); ++i) CHECK(hs[i] == doctest::Approx(ref[i]).epsilon(2e-3));
  Tensor b = softmax(cube().to(DType::bf16), 1, DType::f32);
  CHECK(b.dtype() == DType::f32);
  CHECK(sum(b, {1}).select(0, 0).select(0, 0).item<float>() == doctest::Approx(1));
  CHECK(softmax(tensor({3.0}).reshape({}), 0).item<double>() == 1.0);
  check_error([] { softmax(arange(4), 0); }, {"softmax", "int64"});
  CHECK_THROWS_AS(log_softmax(zeros({2, 3}), 2), IndexError);
  CHECK(softmax(zeros({0, 3}), 1).sizes() == Shape{0, 3});
}
