// Raw dropout front-end: argument checks, output allocation, counter reservation and dispatch.
#include "tensor/ops/dropout.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, double, uint64_t, uint64_t)> dropout("dropout");
}  // namespace kernels

namespace raw {

void check_dropout_probability(double p) {
  SYNCGRAD_CHECK(p >= 0.0 && p <= 1.0, ValueError, "dropout: probability p must be in [0, 1], got ", std::to_string(p),
                 " (p is the fraction of elements zeroed)");
}

DropoutResult dropout(const Tensor& input, double p, Generator* gen) {
  check_dropout_probability(p);
  SYNCGRAD_CHECK(is_floating(input.dtype()), DTypeError, "dropout: input has dtype ", dtype_name(input.dtype()),
                 "; expects a floating dtype (float32, float64, float16, bfloat16); convert with .to()");
  Generator& g = gen != nullptr ? *gen : default_generator();
  DropoutResult result{empty_like(input), empty_like(input)};
  uint64_t first = g.reserve(static_cast<uint64_t>(input.numel()));
  kernels::dropout(input.device(), result.output, result.mask, contiguous(input), p, g.seed(), first);
  return result;
}

}  // namespace raw
}  // namespace syncgrad
