// Finite-difference gradient checking and node-type coverage bookkeeping.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>
#include <unordered_set>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::autograd {
namespace {

std::set<std::string>& covered() {
  static std::set<std::string> names;
  return names;
}

void collect_node_names(const Tensor& output, std::set<std::string>& names) {
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  if (auto fn = output.grad_fn()) {
    stack.push_back(fn.get());
    seen.insert(fn.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    names.insert(node->name());
    for (const Edge& e : node->next_edges) {
      if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
}

double projected(const Tensor& y, const std::vector<double>& w) {
  std::vector<double> values = to_vector<double>(y);
  double total = 0;
  for (size_t i = 0; i < values.size(); ++i) total += values[i] * w[i];
  return total;
}

}  // namespace

GradcheckResult gradcheck(const std::string& label, const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  GradcheckResult result;
  std::vector<Tensor> checked;
  for (const Tensor& t : inputs) {
    if (!t.requires_grad()) continue;
    SYNCGRAD_CHECK(t.dtype() == DType::f64 && t.device().is_cpu() && t.is_contiguous(), ValueError, "gradcheck(", label,
                   "): inputs that require grad must be contiguous float64 CPU tensors");
    checked.push_back(t);
  }
  Tensor y = fn(inputs);
  if (!y.requires_grad()) {
    result.ok = false;
    result.message = label + ": the output does not require grad (the op recorded no history)";
    return result;
  }
  std::set<std::string> names;
  collect_node_names(y, names);

  Generator gen(options.seed);
  Tensor w = randn(y.sizes(), {.dtype = DType::f64}, &gen);
  std::vector<double> weights = to_vector<double>(w);
  std::vector<Tensor> analytical = grad({y}, checked, {w}, false, true);

  for (size_t k = 0; k < checked.size(); ++k) {
    double* data = checked[k].data_ptr<double>();
    std::vector<double> analytic = analytical[k].defined() ? to_vector<double>(analytical[k])
                                                          : std::vector<double>(checked[k].numel(), 0.0);
    for (int64_t i = 0; i < checked[k].numel(); ++i) {
      double original = data[i];
      double plus, minus;
      {
        NoGradGuard no_grad;
        data[i] = original + options.eps;
        plus = projected(fn(inputs), weights);
        data[i] = original - options.eps;
        minus = projected(fn(inputs), weights);
        data[i] = original;
      }
      double numeric = (plus - minus) / (2 * options.eps);
      double diff = std::abs(numeric - analytic[i]);
      if (!(diff <= options.atol + options.rtol * std::abs(numeric))) {
        std::ostringstream os;
        os.precision(10);
        os << label << ": gradient mismatch for input " << k << " (shape " << shape_str(checked[k].sizes())
           << "), element " << i << ": analytical " << analytic[i] << " vs numerical " << numeric;
        result.ok = false;
        result.message = os.str();
        return result;
      }
    }
  }
  covered().insert(names.begin(), names.end());
  return result;
}

const std::set<std::string>& covered_node_types() { return covered(); }

std::vector<std::string> uncovered_node_types() {
  std::vector<std::string> missing;
  for (const std::string& name : registered_node_types()) {
    if (name != "AccumulateGrad" && !covered().count(name)) missing.push_back(name);
  }
  return missing;
}

}  // namespace syncgrad::autograd
