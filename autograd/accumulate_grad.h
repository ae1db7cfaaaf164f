// AccumulateGrad: the node at the end of every path to a leaf. It runs the leaf's hooks, adds the incoming
// gradient into leaf.grad (or stores it), then fires the post-accumulate hooks -- the moment DDP copies the
// gradient into its bucket.
#pragma once

#include "autograd/node.h"

namespace syncgrad::autograd {

class AccumulateGrad final : public NamedNode<"AccumulateGrad"> {
 public:
  explicit AccumulateGrad(const Tensor& leaf);

  GradList apply(GradList&& grads) override;
  uint64_t priority() const override { return UINT64_MAX; }
  // The leaf this node accumulates into (undefined if the leaf is gone).
  Tensor leaf() const;

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

}  // namespace syncgrad::autograd
