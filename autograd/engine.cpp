// The iterative backward engine.
#include "autograd/engine.h"

#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/accumulate_grad.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "profiler/events.h"
#include "tensor/check.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::autograd {
namespace {

struct GraphTask {
  bool retain_graph = false;
  bool accumulate = true;  // false for grad(): leaves' .grad is left alone
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, GradList> inputs;
  std::unordered_set<Node*> reachable;
  std::vector<std::function<void()>> callbacks;
  // grad(): gradients captured at (node, slot).
  std::map<std::pair<Node*, uint32_t>, Tensor> captured;
  std::unordered_set<Node*> capture_nodes;
  // The backward this one runs inside (a node's apply ran a backward of its own: a reentrant checkpoint).
  GraphTask* parent = nullptr;
};

thread_local GraphTask* current_task = nullptr;

struct TaskScope {
  GraphTask* previous;
  explicit TaskScope(GraphTask* task) : previous(current_task) {
    task->parent = previous;
    current_task = task;
  }
  ~TaskScope() { current_task = previous; }
};

struct ReadyEntry {
  uint64_t priority;
  uint64_t sequence_nr;
  std::shared_ptr<Node> node;
  bool operator<(const ReadyEntry& other) const {
    if (priority != other.priority) return priority < other.priority;
    return sequence_nr < other.sequence_nr;
  }
};

void accumulate_into(GradList& buffer, uint32_t slot, Tensor grad) {
  if (!grad.defined()) return;
  if (buffer.size() <= slot) buffer.resize(slot + 1);
  if (!buffer[slot].defined()) {
    buffer[slot] = std::move(grad);
  } else {
    buffer[slot] = raw::add(buffer[slot], grad);
  }
}

void count_dependencies(GraphTask& task, const std::vector<Edge>& root_edges) {
  std::vector<Node*> stack;
  for (const Edge& e : root_edges) {
    if (e.valid() && task.reachable.insert(e.node.get()).second) stack.push_back(e.node.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next_edges) {
      if (!e.valid()) continue;
      ++task.dependencies[e.node.get()];
      if (task.reachable.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
}

Tensor root_gradient(const Tensor& root, const Tensor& given, size_t i) {
  if (given.defined()) {
    SYNCGRAD_CHECK(given.sizes() == root.sizes(), ShapeError, "backward: gradient ", i, " has shape ",
                   shape_str(given.sizes()), " but its output has shape ", shape_str(root.sizes()));
    return given;
  }
  SYNCGRAD_CHECK(root.numel() == 1, AutogradError,
                 "backward: grad can be implicitly created only for scalar outputs, but output ", i, " has shape ",
                 shape_str(root.sizes()), "; pass a gradient of that shape or reduce the output first (e.g. .sum())");
  return ones_like(root);
}

void run_pre_hooks(Node& node, GradList& grads) {
  for (auto& [slot, hook] : node.pre_hooks) {
    if (slot < grads.size() && grads[slot].defined()) {
      Tensor replaced = hook(grads[slot]);
      if (replaced.defined()) grads[slot] = replaced;
    }
  }
}

void execute(GraphTask& task, const std::vector<Edge>& root_edges, const std::vector<Tensor>& root_grads) {
  TaskScope scope(&task);
  NoGradGuard no_grad;  // backward formulas are not recorded (no create_graph)
  count_dependencies(task, root_edges);
  std::priority_queue<ReadyEntry> ready;
  for (size_t i = 0; i < root_edges.size(); ++i) {
    const Edge& e = root_edges[i];
    if (!e.valid()) continue;
    accumulate_into(task.inputs[e.node.get()], e.input_nr, root_grads[i]);
  }
  std::unordered_set<Node*> queued;
  for (const Edge& e : root_edges) {
    if (e.valid() && task.dependencies[e.node.get()] == 0 && queued.insert(e.node.get()).second) {
      ready.push({e.node->priority(), e.node->sequence_nr(), e.node});
    }
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top().node;
    ready.pop();
    GradList grads = std::move(task.inputs[node.get()]);
    task.inputs.erase(node.get());
    grads.resize(std::max<size_t>(grads.size(), node->num_outputs()));
    run_pre_hooks(*node, grads);
    bool is_accumulator = dynamic_cast<AccumulateGrad*>(node.get()) != nullptr;
    if (task.capture_nodes.count(node.get())) {
      for (uint32_t slot = 0; slot < grads.size(); ++slot) {
        auto key = std::make_pair(node.get(), slot);
        if (task.captured.count(key)) task.captured[key] = grads[slot];
      }
    }
    GradList outputs;
    // Nodes that take long enough to matter show on the timeline under their op's name (profiler/events.h).
    profiler::Scope span("autograd", "", profiler::Scope::Detail::kAboveThreshold);
    if (span.active()) span.set_name(node->name());
    if (is_accumulator) {
      if (task.accumulate) node->apply(std::move(grads));
    } else {
      node->check_not_released();
      outputs = node->apply(std::move(grads));
      // What the node saved is needed by nothing after it ran: free it now rather than at the end of backward,
      // so backward's peak memory falls as it goes (as in PyTorch).
      if (!task.retain_graph) node->release();
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      if (i < outputs.size()) accumulate_into(task.inputs[e.node.get()], e.input_nr, std::move(outputs[i]));
      if (--task.dependencies[e.node.get()] == 0) ready.push({e.node->priority(), e.node->sequence_nr(), e.node});
    }
  }
  // Callbacks may queue further callbacks.
  for (size_t i = 0; i < task.callbacks.size(); ++i) {
    auto callback = std::move(task.callbacks[i]);
    callback();
  }
}

std::vector<Edge> root_edges_of(const std::vector<Tensor>& roots) {
  std::vector<Edge> edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge e = gradient_edge(roots[i]);
    SYNCGRAD_CHECK(e.valid(), AutogradError, "backward: output ", i,
                   " does not require grad and has no grad_fn; did you compute it under NoGradGuard, detach() it, or "
                   "forget requires_grad_() on the inputs?");
    edges.push_back(e);
  }
  return edges;
}

std::vector<Tensor> root_grads_of(const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  SYNCGRAD_CHECK(given.empty() || given.size() == roots.size(), ValueError, "backward: got ", given.size(),
                 " gradients for ", roots.size(), " outputs");
  std::vector<Tensor> grads;
  for (size_t i = 0; i < roots.size(); ++i) grads.push_back(root_gradient(roots[i], given.empty() ? Tensor() : given[i], i));
  return grads;
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool retain_graph) {
  GraphTask task;
  task.retain_graph = retain_graph;
  std::vector<Tensor> grads = root_grads_of(roots, grad_roots);
  execute(task, root_edges_of(roots), grads);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool allow_unused) {
  GraphTask task;
  task.retain_graph = retain_graph;
  task.accumulate = false;
  std::vector<std::pair<Node*, uint32_t>> keys;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    SYNCGRAD_CHECK(e.valid(), AutogradError, "grad: input ", i, " does not require grad");
    keys.emplace_back(e.node.get(), e.input_nr);
    task.captured[keys.back()] = Tensor();
    task.capture_nodes.insert(e.node.get());
  }
  std::vector<Tensor> grads = root_grads_of(outputs, grad_outputs);
  execute(task, root_edges_of(outputs), grads);
  std::vector<Tensor> result;
  for (size_t i = 0; i < keys.size(); ++i) {
    Tensor g = task.captured[keys[i]];
    SYNCGRAD_CHECK(g.defined() || allow_unused, AutogradError, "grad: input ", i,
                   " was not used to compute the outputs; pass allow_unused=true if that is intended");
    result.push_back(g);
  }
  return result;
}

bool in_backward() { return current_task != nullptr; }

bool is_reachable(const Tensor& leaf) {
  SYNCGRAD_CHECK(current_task != nullptr, AutogradError, "is_reachable: only meaningful during a backward pass");
  AutogradMeta* m = meta_of(leaf);
  if (m == nullptr) return false;
  Node* node = m->grad_fn ? m->grad_fn.get() : m->accumulator.lock().get();
  if (node == nullptr) return false;
  for (GraphTask* task = current_task; task != nullptr; task = task->parent) {
    if (task->reachable.count(node) > 0) return true;
  }
  return false;
}

void queue_callback(std::function<void()> callback) {
  SYNCGRAD_CHECK(current_task != nullptr, AutogradError,
                 "queue_callback: no backward pass is running on this thread; queue callbacks from hooks");
  GraphTask* outermost = current_task;
  while (outermost->parent != nullptr) outermost = outermost->parent;
  outermost->callbacks.push_back(std::move(callback));
}

}  // namespace syncgrad::autograd
