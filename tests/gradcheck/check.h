// Helpers for gradcheck test cases: float64 leaves and a CHECK that reports gradcheck's message.
#pragma once

#include <doctest/doctest.h>

#include "syncgrad.h"

namespace syncgrad::testing {

// A float64 leaf with values from a fixed seed, requiring grad.
inline Tensor leaf(const Shape& shape, uint64_t seed = 1, double scale = 1.0) {
  Generator gen(seed);
  Tensor t = randn(shape, {.dtype = DType::f64}, &gen);
  if (scale != 1.0) t = raw::mul(t, scale);
  t.requires_grad_(true);
  return t;
}

inline autograd::GradcheckResult run_gradcheck(const std::string& label, const autograd::GradcheckFn& fn,
                                              const std::vector<Tensor>& inputs,
                                              const autograd::GradcheckOptions& options = {}) {
  return autograd::gradcheck(label, fn, inputs, options);
}

}  // namespace syncgrad::testing

// CHECK_GRADCHECK(label, fn, {inputs...} [, options]): fails the test case with gradcheck's message.
#define CHECK_GRADCHECK(label, ...)                                                      \
  do {                                                                                  \
    auto gradcheck_result_ = ::syncgrad::testing::run_gradcheck((label), __VA_ARGS__);  \
    CHECK_MESSAGE(gradcheck_result_.ok, gradcheck_result_.message);                     \
  } while (0)
