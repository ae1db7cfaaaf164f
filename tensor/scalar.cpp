// Scalar's natural dtype.
#include "tensor/scalar.h"

namespace syncgrad {

DType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::boolean: return DType::boolean;
    case Kind::integral: return DType::i64;
    case Kind::floating: return default_float_dtype();
  }
  return default_float_dtype();
}

}  // namespace syncgrad
