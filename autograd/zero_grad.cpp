// zero_grad for a list of parameters.
#include "autograd/zero_grad.h"

#include "tensor/ops/copy.h"

namespace syncgrad::autograd {

void zero_grad(const std::vector<Tensor>& params, bool set_to_none) {
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) p.set_grad(Tensor());
    else raw::fill_(g, 0);
  }
}

}  // namespace syncgrad::autograd
