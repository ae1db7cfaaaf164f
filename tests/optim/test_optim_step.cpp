// The raw fused update kernels (tensor/ops/optim_step.h): strided operands, half dtypes, the threaded flat
// path, version bumps, and every operand error.
#include <doctest/doctest.h>

#include "optim_reference.h"
#include "tensor/ops/optim_step.h"

using namespace syncgrad;
using namespace optim_test;

namespace {

// Values k -> a smooth, sign-changing sequence.
std::vector<double> wave(size_t n, double phase) {
  std::vector<double> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = std::sin(0.7 * static_cast<double>(k) + phase) * 2.0;
  return v;
}

// The elements of a (3, 2) tensor read through its transpose (2, 3), in row-major order of the transpose.
std::vector<double> transposed(const std::vector<double>& v) { return {v[0], v[2], v[4], v[1], v[3], v[5]}; }

}  // namespace

TEST_CASE("sgd_step_ on strided operands matches the reference") {
  // param and grad are transposed views, the buffer a contiguous tensor of their shape.
  const std::vector<double> p0 = wave(6, 0.0), g0 = wave(6, 1.0);
  Tensor param = from_vector(p0, {3, 2}).t();
  Tensor grad = from_vector(g0, {3, 2}).t();
  Tensor buffer = empty({2, 3}, {.dtype = DType::f64});
  SgdReference ref{.lr = 0.1, .momentum = 0.9, .dampening = 0.2, .weight_decay = 0.05, .nesterov = false};
  std::vector<double> expected = transposed(p0);
  SGDStepArgs args{.lr = 0.1, .momentum = 0.9, .dampening = 0.2, .weight_decay = 0.05, .first_step = true};
  for (int s = 0; s < 2; ++s) {
    raw::sgd_step_(param, grad, buffer, args);
    ref.step(expected, transposed(g0));
    args.first_step = false;
  }
  check_close(to_vector<double>(param), expected, 1e-13);
  check_close(to_vector<double>(buffer), ref.buf, 1e-13);
}

TEST_CASE("adam_step_ on strided operands with amsgrad matches the reference") {
  const std::vector<double> p0 = wave(6, 0.3), g0 = wave(6, 2.0);
  Tensor param = from_vector(p0, {3, 2}).t();
  Tensor grad = from_vector(g0, {3, 2}).t();
  Tensor m = zeros({3, 2}, {.dtype = DType::f64}).t();
  Tensor v = zeros({2, 3}, {.dtype = DType::f64});
  Tensor v_max = zeros({2, 3}, {.dtype = DType::f64});
  AdamReference ref{.lr = 0.1, .beta1 = 0.7, .beta2 = 0.8, .weight_decay = 0.1, .decoupled = true, .amsgrad = true};
  std::vector<double> expected = transposed(p0);
  std::vector<double> g = transposed(g0);
  for (int64_t s = 1; s <= 3; ++s) {
    raw::adam_step_(param, grad, m, v, v_max,
                    {.lr = 0.1, .beta1 = 0.7, .beta2 = 0.8, .weight_decay = 0.1, .decoupled_weight_decay = true,
                     .amsgrad = true, .step = s});
    ref.step(expected, g);
    // A smaller gradient on later steps lets v fall below v_max.
    raw::mul_(grad, 0.3);
    for (double& x : g) x *= 0.3;
  }
  check_close(to_vector<double>(param), expected, 1e-13);
  check_close(to_vector<double>(m), ref.m, 1e-13);
  check_close(to_vector<double>(v_max), ref.v_max, 1e-13);
}

TEST_CASE("fused steps on half dtypes compute in float32") {
  for (DType dtype : {DType::f16, DType::bf16}) {
    INFO(dtype_name(dtype));
    const std::vector<double> p0 = wave(5, 0.1), g0 = wave(5, 0.9);
    Tensor param = from_vector(p0, {5}, {.dtype = dtype});
    Tensor grad = from_vector(g0, {5}, {.dtype = dtype});
    Tensor m = zeros({5}, {.dtype = dtype}), v = zeros({5}, {.dtype = dtype});
    raw::adam_step_(param, grad, m, v, Tensor(), {.lr = 0.1, .step = 1});
    AdamReference ref{.lr = 0.1};
    std::vector<double> expected = to_vector<double>(from_vector(p0, {5}, {.dtype = dtype}));
    ref.step(expected, to_vector<double>(grad));
    check_close(to_vector<double>(param), expected, 1e-2);
    CHECK(param.dtype() == dtype);

    Tensor buffer = zeros({5}, {.dtype = dtype});
    raw::sgd_step_(param, grad, buffer, {.lr = 0.5, .momentum = 0.9, .first_step = true});
    check_close(to_vector<double>(buffer), to_vector<double>(grad), 1e-6);
  }
}

TEST_CASE("fused steps split big contiguous tensors over threads with identical results") {
  const int64_t n = 600000;
  std::vector<double> p0(static_cast<size_t>(n)), g0(p0.size());
  for (size_t k = 0; k < p0.size(); ++k) {
    p0[k] = std::sin(0.001 * static_cast<double>(k));
    g0[k] = std::cos(0.003 * static_cast<double>(k));
  }
  const int threads = get_num_threads();
  std::vector<std::vector<double>> results;
  for (int t : {1, 2}) {
    set_num_threads(t);
    Tensor param = from_vector(p0, {n}, {.dtype = DType::f32});
    Tensor grad = from_vector(g0, {n}, {.dtype = DType::f32});
    Tensor m = zeros({n}), v = zeros({n});
    raw::adam_step_(param, grad, m, v, Tensor(), {.lr = 0.01, .weight_decay = 0.1, .step = 1});
    results.push_back(to_vector<double>(param));
  }
  set_num_threads(threads);
  CHECK(results[0] == results[1]);
  // Step 1 of Adam moves every element by about lr against the sign of its gradient (+ weight decay).
  AdamReference ref{.lr = 0.01, .weight_decay = 0.1};
  std::vector<double> expected = p0;
  ref.step(expected, g0);
  for (size_t k = 0; k < p0.size(); k += 9973) {
    INFO("element " << k);
    CHECK(results[0][k] == doctest::Approx(expected[k]).epsilon(1e-5).scale(1.0));
  }
}

TEST_CASE("fused steps bump the versions of what they write") {
  Tensor param = ones({3}), grad = ones({3}), m = zeros({3}), v = zeros({3});
  const uint64_t p = param.version(), mv = m.version(), g = grad.version();
  raw::adam_step_(param, grad, m, v, Tensor(), {.lr = 0.1, .step = 1});
  CHECK(param.version() > p);
  CHECK(m.version() > mv);
  CHECK(grad.version() == g);
}

TEST_CASE("fused steps check their operands") {
  Tensor param = ones({2, 3}), grad = ones({2, 3}), m = zeros({2, 3}), v = zeros({2, 3});
  std::string e = error_of<ShapeError>([&] { raw::sgd_step_(param, ones({3, 2}), Tensor(), {.lr = 0.1}); });
  CHECK(contains(e, "sgd_step_"));
  CHECK(contains(e, "grad"));
  CHECK(contains(e, "[3, 2]"));
  CHECK(contains(e, "[2, 3]"));
  e = error_of<DTypeError>([&] { raw::sgd_step_(param, ones({2, 3}, {.dtype = DType::f64}), Tensor(), {.lr = 0.1}); });
  CHECK(contains(e, "float64"));
  CHECK(contains(e, "float32"));
  e = error_of<DTypeError>([&] { raw::sgd_step_(ones({2}, {.dtype = DType::i64}), ones({2}, {.dtype = DType::i64}), Tensor(), {}); });
  CHECK(contains(e, "int64"));
  e = error_of<ValueError>([&] { raw::sgd_step_(param, grad, Tensor(), {.lr = 0.1, .momentum = 0.9}); });
  CHECK(contains(e, "momentum_buffer"));
  e = error_of<ValueError>([&] { raw::sgd_step_(param, grad, Tensor(), {.lr = -1}); });
  CHECK(contains(e, "lr"));
  e = error_of<ValueError>([&] { raw::sgd_step_(ones({1}).expand({3}), ones({3}), Tensor(), {.lr = 0.1}); });
  CHECK(contains(e, "stride 0"));

  e = error_of<ShapeError>([&] { raw::adam_step_(param, grad, zeros({6}), v, Tensor(), {.step = 1}); });
  CHECK(contains(e, "exp_avg"));
  e = error_of<ValueError>([&] { raw::adam_step_(param, grad, m, v, Tensor(), {.amsgrad = true, .step = 1}); });
  CHECK(contains(e, "max_exp_avg_sq"));
  e = error_of<ValueError>([&] { raw::adam_step_(param, grad, m, v, Tensor(), {.step = 0}); });
  CHECK(contains(e, "step = 0"));
  e = error_of<ValueError>([&] { raw::adam_step_(param, grad, m, v, Tensor(), {.beta1 = 1.0, .step = 1}); });
  CHECK(contains(e, "betas"));
  CHECK(to_vector<double>(param) == std::vector<double>(6, 1.0));
}
