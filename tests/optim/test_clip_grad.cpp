// clip_grad_norm_: total norms of several orders against hand-computed values, scaling only above max_norm,
// parameters without gradients, float32/bfloat16 gradients, non-finite norms and argument checks.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "optim/clip_grad.h"
#include "optim_reference.h"

using namespace syncgrad;
using namespace optim_test;

namespace {

// Leaves with gradients {3, -4} and {12} (L2 norm 13) plus one without a gradient.
std::vector<Tensor> with_grads(DType dtype = DType::f64) {
  Tensor a = zeros({2}, {.dtype = dtype, .requires_grad = true});
  Tensor b = zeros({1, 1}, {.dtype = dtype, .requires_grad = true});
  Tensor c = zeros({3}, {.dtype = dtype, .requires_grad = true});
  a.set_grad(from_vector(std::vector<double>{3.0, -4.0}, {2}, {.dtype = dtype}));
  b.set_grad(from_vector(std::vector<double>{12.0}, {1, 1}, {.dtype = dtype}));
  return {a, b, c};
}

std::vector<double> grads_of(const std::vector<Tensor>& params) {
  std::vector<double> out;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    for (double v : to_vector<double>(p.grad())) out.push_back(v);
  }
  return out;
}

}  // namespace

TEST_CASE("clip_grad_norm_ returns the total norm and leaves small gradients alone") {
  std::vector<Tensor> params = with_grads();
  CHECK(optim::clip_grad_norm_(params, 13.5) == doctest::Approx(13.0).epsilon(1e-15));
  CHECK(grads_of(params) == std::vector<double>{3.0, -4.0, 12.0});
  CHECK(!params[2].grad().defined());
}

TEST_CASE("clip_grad_norm_ scales every gradient by max_norm / (total + 1e-6)") {
  std::vector<Tensor> params = with_grads();
  CHECK(optim::clip_grad_norm_(params, 6.5) == doctest::Approx(13.0).epsilon(1e-15));
  const double c = 6.5 / (13.0 + 1e-6);
  check_close(grads_of(params), {3.0 * c, -4.0 * c, 12.0 * c}, 1e-14);
}

TEST_CASE("clip_grad_norm_ with other norm orders") {
  SUBCASE("infinity: the largest magnitude") {
    std::vector<Tensor> params = with_grads();
    params[1].set_grad(from_vector(std::vector<double>{-12.0}, {1, 1}));
    CHECK(optim::clip_grad_norm_(params, 6.0, std::numeric_limits<double>::infinity()) == 12.0);
    const double c = 6.0 / (12.0 + 1e-6);
    check_close(grads_of(params), {3.0 * c, -4.0 * c, -12.0 * c}, 1e-14);
  }
  SUBCASE("1: the sum of magnitudes") {
    std::vector<Tensor> params = with_grads();
    CHECK(optim::clip_grad_norm_(params, 100.0, 1.0) == doctest::Approx(19.0).epsilon(1e-15));
  }
  SUBCASE("3") {
    std::vector<Tensor> params = with_grads();
    const double expected = std::cbrt(27.0 + 64.0 + 1728.0);
    CHECK(optim::clip_grad_norm_(params, 100.0, 3.0) == doctest::Approx(expected).epsilon(1e-14));
  }
}

TEST_CASE("clip_grad_norm_ on float32 and bfloat16 gradients") {
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dtype));
    std::vector<Tensor> params = with_grads(dtype);
    CHECK(optim::clip_grad_norm_(params, 1.3) == doctest::Approx(13.0).epsilon(1e-6));
    CHECK(params[0].grad().dtype() == dtype);
    check_close(grads_of(params), {0.3, -0.4, 1.2}, 1e-2);
  }
}

TEST_CASE("clip_grad_norm_ without gradients returns 0") {
  Tensor p = zeros({2}, {.requires_grad = true});
  CHECK(optim::clip_grad_norm_({p}, 1.0) == 0.0);
  CHECK(optim::clip_grad_norm_({}, 1.0) == 0.0);
}

TEST_CASE("clip_grad_norm_ with a non-finite norm") {
  std::vector<Tensor> params = with_grads();
  params[1].set_grad(from_vector(std::vector<double>{std::numeric_limits<double>::infinity()}, {1, 1}));
  SUBCASE("error_if_nonfinite raises and leaves the gradients alone") {
    std::string e = error_of<ValueError>([&] { optim::clip_grad_norm_(params, 1.0, 2.0, true); });
    CHECK(contains(e, "non-finite"));
    CHECK(contains(e, "inf"));
    CHECK(grads_of(params)[0] == 3.0);
  }
  SUBCASE("otherwise the finite gradients are scaled by 0, as in PyTorch") {
    CHECK(std::isinf(optim::clip_grad_norm_(params, 1.0)));
    const std::vector<double> g = grads_of(params);
    CHECK(g[0] == 0.0);
    CHECK(g[1] == 0.0);
    CHECK(std::isnan(g[2]));
  }
  SUBCASE("a NaN gradient makes every gradient NaN") {
    params[1].set_grad(from_vector(std::vector<double>{std::nan("")}, {1, 1}));
    CHECK(std::isnan(optim::clip_grad_norm_(params, 1.0)));
    for (double v : grads_of(params)) CHECK(std::isnan(v));
  }
}

TEST_CASE("clip_grad_norm_ rejects invalid norm_type and max_norm") {
  std::vector<Tensor> params = with_grads();
  std::string e = error_of<ValueError>([&] { optim::clip_grad_norm_(params, 1.0, 0.0); });
  CHECK(contains(e, "norm_type 0"));
  e = error_of<ValueError>([&] { optim::clip_grad_norm_(params, -1.0); });
  CHECK(contains(e, "max_norm -1"));
}
