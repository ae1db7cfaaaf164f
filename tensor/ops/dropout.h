// Raw (non-differentiable) dropout: zeroes each element with probability p and scales the kept ones by
// 1 / (1 - p). The mask comes from the counter-based generator, so it depends only on the generator's state,
// never on the thread count or the device. The autograd layer (autograd/ops/dropout.h) wraps it.
#pragma once

#include "tensor/dispatch.h"
#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// out, mask, input: contiguous, same shape and floating dtype. Element i is kept when the uniform double
// drawn from Philox(seed, first_counter + i) (words 0 and 1, as rand() draws it) is >= p; then
// mask[i] = 1 / (1 - p) and out[i] = input[i] / (1 - p) (in opmath), else both are 0 (every element when
// p == 1).
extern KernelSlot<void(const Tensor& out, const Tensor& mask, const Tensor& input, double p, uint64_t seed,
                       uint64_t first_counter)>
    dropout;
}  // namespace kernels

namespace raw {

// Raises ValueError unless p is in [0, 1].
void check_dropout_probability(double p);

struct DropoutResult {
  Tensor output;  // input's shape
  Tensor mask;    // input's shape and dtype: 0 for dropped elements, 1 / (1 - p) for kept ones
};

// Always drops (the training behaviour); p in [0, 1]. Draws input.numel() counters from `gen` (default: the
// process generator).
DropoutResult dropout(const Tensor& input, double p, Generator* gen = nullptr);

}  // namespace raw

}  // namespace syncgrad
