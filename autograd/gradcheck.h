// gradcheck: compares the gradients autograd computes with central finite differences in float64.
// The output y = fn(inputs) is projected on fixed random weights w (L = sum(w * y)) so one backward gives
// the gradient of L for every input element; the numerical side perturbs each element by +-eps.
// Every node type met in the checked graph is recorded as covered (see covered_node_types()).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
  uint64_t seed = 1234;  // for the projection weights
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // on failure: label, input, element index, analytical vs numerical value
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// `inputs`: float64 CPU tensors (those that require grad are checked; others, e.g. indices, are passed as-is).
GradcheckResult gradcheck(const std::string& label, const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// Node type names that appeared in a graph some gradcheck verified successfully in this process.
const std::set<std::string>& covered_node_types();
// Registered node types that no successful gradcheck covered ("AccumulateGrad" excluded).
std::vector<std::string> uncovered_node_types();

}  // namespace syncgrad::autograd
