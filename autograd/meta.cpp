// AutogradMeta access and history recording helpers.
#include "autograd/meta.h"

#include "autograd/accumulate_grad.h"
#include "autograd/grad_mode.h"
#include "tensor/check.h"

namespace syncgrad::autograd {

AutogradMeta* meta_of(const Tensor& t) {
  if (!t.defined()) return nullptr;
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}

AutogradMeta& ensure_meta(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (m == nullptr) {
    auto created = std::make_unique<AutogradMeta>();
    m = created.get();
    t.impl()->set_autograd_meta(std::move(created));
  }
  return *m;
}

bool needs_grad(const Tensor& t) {
  if (!GradMode::is_enabled()) return false;
  AutogradMeta* m = meta_of(t);
  return m != nullptr && m->requires_grad;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (m == nullptr || !m->requires_grad) return {};
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  std::shared_ptr<AccumulateGrad> acc = m->accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->accumulator = acc;
  }
  return Edge{acc, 0};
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = ensure_meta(output);
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = output_nr;
}

void collect_next_edges(Node& node, std::initializer_list<const Tensor*> inputs) {
  node.next_edges.clear();
  node.next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs) node.next_edges.push_back(t != nullptr && t->defined() ? gradient_edge(*t) : Edge{});
}

void collect_next_edges(Node& node, const std::vector<Tensor>& inputs) {
  node.next_edges.clear();
  node.next_edges.reserve(inputs.size());
  for (const Tensor& t : inputs) node.next_edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t != nullptr && needs_grad(*t)) return true;
  }
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (needs_grad(t)) return true;
  }
  return false;
}

void check_inplace(const Tensor& t, const char* op) {
  if (!GradMode::is_enabled()) return;
  AutogradMeta* m = meta_of(t);
  SYNCGRAD_CHECK(m == nullptr || !m->requires_grad || m->grad_fn, AutogradError, op,
                 ": a leaf tensor that requires grad is used in an in-place operation; wrap the update in NoGradGuard "
                 "(as optimizers do) or work on a clone()");
}

}  // namespace syncgrad::autograd

namespace syncgrad::autograd {

void record(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<const Tensor*> outputs) {
  collect_next_edges(*node, inputs);
  node->set_num_outputs(static_cast<uint32_t>(outputs.size()));
  uint32_t i = 0;
  for (const Tensor* out : outputs) set_history(*out, node, i++);
}

void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  collect_next_edges(*node, inputs);
  node->set_num_outputs(static_cast<uint32_t>(outputs.size()));
  for (uint32_t i = 0; i < outputs.size(); ++i) set_history(outputs[i], node, i);
}

}  // namespace syncgrad::autograd
