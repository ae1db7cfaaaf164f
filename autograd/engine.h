// The backward engine: counts dependencies from the roots, then runs ready nodes newest-first (so gradients
// appear in reverse forward order and DDP can reduce early buckets while backward continues), summing
// gradients that meet at a node. During a backward, callers can ask which leaves are reachable from the
// roots and queue callbacks that run once every node has run (DDP waits for its allreduces there).
#pragma once

#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::autograd {

// Backpropagates from `roots`; grad_roots[i] may be undefined only for one-element roots (gradient 1).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots = {},
              bool retain_graph = false);

// Gradients of `outputs` with respect to `inputs` without touching any .grad (used by gradcheck).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

// True while this thread runs a backward.
bool in_backward();
// A backward run from inside a node's apply (nn::checkpoint's recomputation) is nested in the running one:
// is_reachable answers for the running backward or any it is nested in, and queue_callback queues on the
// outermost one, so a callback runs once the whole backward is done.
// During a backward: whether the leaf `t` receives a gradient in this backward. Throws outside a backward.
bool is_reachable(const Tensor& leaf);
// During a backward: runs `callback` after all nodes have run, before the outermost backward() returns.
void queue_callback(std::function<void()> callback);

}  // namespace syncgrad::autograd
