// Dropout layer: syncgrad::dropout with the module's training flag.
#include "nn/dropout.h"

#include <sstream>

#include "autograd/ops/dropout.h"
#include "tensor/check.h"

namespace syncgrad::nn {

Dropout::Dropout(double p, Generator* gen) : Module("Dropout"), p(p), generator(gen) {
  SYNCGRAD_CHECK(p >= 0.0 && p <= 1.0, ValueError, "Dropout: probability p must be in [0, 1], got ", std::to_string(p));
}

Tensor Dropout::forward(const Tensor& input) { return dropout(input, p, is_training(), generator); }

std::string Dropout::extra_repr() const {
  std::ostringstream out;
  out << "p=" << p;
  return out.str();
}

}  // namespace syncgrad::nn
