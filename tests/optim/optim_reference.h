// Shared by the optim tests: a tiny quadratic problem whose gradient is known in closed form, PyTorch's
// documented SGD and Adam/AdamW algorithms written as plain double loops, and error-message helpers.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops/elementwise.h"
#include "optim/optimizer.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/threads.h"

namespace optim_test {

using namespace syncgrad;

// loss = sum_k a_k * p_k^2 + b_k * p_k per parameter, so d loss / d p_k = 2 a_k p_k + b_k.
inline double coef_a(size_t k) { return 0.5 + 0.1 * static_cast<double>(k); }
inline double coef_b(size_t k) { return 0.3 - 0.2 * static_cast<double>(k); }

inline std::vector<double> quadratic_grad(const std::vector<double>& p) {
  std::vector<double> g(p.size());
  for (size_t k = 0; k < p.size(); ++k) g[k] = 2.0 * coef_a(k) * p[k] + coef_b(k);
  return g;
}

// Runs the loss through autograd and backward, accumulating into each parameter's .grad.
inline void quadratic_backward(const std::vector<Tensor>& params) {
  Tensor loss;
  for (const Tensor& p : params) {
    std::vector<double> a(static_cast<size_t>(p.numel())), b(a.size());
    for (size_t k = 0; k < a.size(); ++k) {
      a[k] = coef_a(k);
      b[k] = coef_b(k);
    }
    Tensor at = from_vector(a, p.sizes(), {.dtype = p.dtype()});
    Tensor bt = from_vector(b, p.sizes(), {.dtype = p.dtype()});
    Tensor term = (at * p * p + bt * p).sum();
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
}

// The problem's starting values: one (2, 3) and one (4) parameter.
inline std::vector<std::vector<double>> initial_values() {
  return {{0.5, -1.2, 2.0, 0.1, -0.7, 1.5}, {1.0, -2.0, 0.25, 3.0}};
}
inline std::vector<Shape> initial_shapes() { return {{2, 3}, {4}}; }

inline std::vector<Tensor> make_params(DType dtype = DType::f64) {
  std::vector<Tensor> params;
  const auto values = initial_values();
  const auto shapes = initial_shapes();
  for (size_t i = 0; i < values.size(); ++i) {
    Tensor p = from_vector(values[i], shapes[i], {.dtype = dtype});
    p.requires_grad_(true);
    params.push_back(p);
  }
  return params;
}

// PyTorch's SGD (grad negated first under maximize, then L2 weight decay, momentum, nesterov).
struct SgdReference {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  std::vector<double> buf{};
  bool has_buf = false;

  void step(std::vector<double>& p, const std::vector<double>& grad) {
    buf.resize(p.size());
    for (size_t k = 0; k < p.size(); ++k) {
      double g = maximize ? -grad[k] : grad[k];
      g += weight_decay * p[k];
      if (momentum != 0) {
        buf[k] = has_buf ? momentum * buf[k] + (1 - dampening) * g : g;
        g = nesterov ? g + momentum * buf[k] : buf[k];
      }
      p[k] -= lr * g;
    }
    has_buf = true;
  }
};

// PyTorch's Adam / AdamW (decoupled) with bias corrections, amsgrad and maximize.
struct AdamReference {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false, amsgrad = false, maximize = false;
  std::vector<double> m{}, v{}, v_max{};
  int step_count = 0;

  void step(std::vector<double>& p, const std::vector<double>& grad) {
    m.resize(p.size());
    v.resize(p.size());
    v_max.resize(p.size());
    ++step_count;
    const double bc1 = 1 - std::pow(beta1, step_count);
    const double bc2 = 1 - std::pow(beta2, step_count);
    for (size_t k = 0; k < p.size(); ++k) {
      double g = maximize ? -grad[k] : grad[k];
      if (decoupled) p[k] *= 1 - lr * weight_decay;
      else g += weight_decay * p[k];
      m[k] = beta1 * m[k] + (1 - beta1) * g;
      v[k] = beta2 * v[k] + (1 - beta2) * g * g;
      const double m_hat = m[k] / bc1;
      double v_hat = v[k] / bc2;
      if (amsgrad) {
        v_max[k] = std::max(v_max[k], v[k]);
        v_hat = v_max[k] / bc2;
      }
      p[k] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tol) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tol).scale(1.0));
  }
}

// Runs `steps` rounds of backward, opt.step(), opt.zero_grad() on the quadratic problem and checks each
// parameter after every step against refs[i] (one reference optimizer per parameter, same options).
template <class Ref>
void check_steps(optim::Optimizer& opt, const std::vector<Tensor>& params, std::vector<Ref> refs, double tol,
                 int steps = 3) {
  std::vector<std::vector<double>> expected = initial_values();
  for (int s = 0; s < steps; ++s) {
    quadratic_backward(params);
    opt.step();
    opt.zero_grad();
    for (size_t i = 0; i < params.size(); ++i) {
      refs[i].step(expected[i], quadratic_grad(expected[i]));
      INFO("step " << s + 1 << ", parameter " << i);
      check_close(to_vector<double>(params[i]), expected[i], tol);
    }
  }
}

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("expected another exception type, got: " << e.what());
    return {};
  }
  FAIL("expected an exception");
  return {};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace optim_test
