// Shared helpers of the nn tests: host values, closeness checks and exception capture.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "syncgrad.h"

namespace syncgrad::nn_test {

inline std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }

inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tol = 1e-6) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    if (tol == 0) CHECK(actual[i] == expected[i]);
    else CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tol).scale(1.0));
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

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::vector<std::string> keys_of(const nn::StateDict& entries) {
  std::vector<std::string> out;
  for (const auto& [key, value] : entries) out.push_back(key);
  return out;
}

}  // namespace syncgrad::nn_test
