// AutogradMeta: the per-tensor autograd state behind TensorImpl's opaque slot: requires_grad, the grad_fn
// that produced a non-leaf (and which of its outputs this tensor is), and for leaves the accumulated .grad,
// the gradient accumulator node and the post-accumulate hooks.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "autograd/node.h"
#include "tensor/tensor.h"

namespace syncgrad::autograd {

class AccumulateGrad;

struct AutogradMeta final : AutogradMetaInterface {
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  bool retains_grad = false;
  Tensor grad;
  std::weak_ptr<AccumulateGrad> accumulator;  // leaves only; created on first use in a graph
  std::vector<std::function<Tensor(const Tensor&)>> leaf_hooks;                  // leaves: before accumulation
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;         // leaves: after accumulation
};

// The tensor's meta, or nullptr when it has none yet.
AutogradMeta* meta_of(const Tensor& t);
AutogradMeta& ensure_meta(const Tensor& t);

// True when recording is on and the tensor takes part in autograd.
bool needs_grad(const Tensor& t);

// The edge a gradient for `t` must flow along: its grad_fn slot, or its leaf accumulator (created lazily),
// or an invalid edge when t does not require grad.
Edge gradient_edge(const Tensor& t);

// Makes `output` the `output_nr`-th result of `node` (sets grad_fn and requires_grad).
void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr = 0);

// Builds next_edges of `node` from the op's inputs.
void collect_next_edges(Node& node, std::initializer_list<const Tensor*> inputs);
void collect_next_edges(Node& node, const std::vector<Tensor>& inputs);

// True when any input requires grad and grad mode is on: the op must record a node.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Raises AutogradError when an in-place op targets a leaf that requires grad (outside no_grad).
void check_inplace(const Tensor& t, const char* op);

}  // namespace syncgrad::autograd
