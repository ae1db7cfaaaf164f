// A number passed to an op without being a tensor (the `2` in `x * 2`): bool, integer or floating.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tensor/dtype.h"

namespace syncgrad {

class Scalar {
 public:
  enum class Kind : uint8_t { boolean, integral, floating };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::boolean), i_(v), d_(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::integral), i_(static_cast<int64_t>(v)), d_(static_cast<double>(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::floating), i_(static_cast<int64_t>(v)), d_(static_cast<double>(v)) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::floating; }
  bool is_integral() const { return kind_ == Kind::integral; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  double to_double() const { return d_; }
  int64_t to_int() const { return i_; }
  // The dtype a 0-dim tensor made from this scalar would have (f32 default float, i64, bool).
  DType natural_dtype() const;

 private:
  Kind kind_;
  int64_t i_;
  double d_;
};

}  // namespace syncgrad
