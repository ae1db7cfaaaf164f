// Node sequence numbers, the node type registry and saved-tensor version checks.
#include "autograd/node.h"

#include "tensor/ops/views.h"

namespace syncgrad::autograd {
namespace {
std::atomic<uint64_t> next_sequence_nr{0};

std::set<std::string>& node_registry() {
  static std::set<std::string> registry;
  return registry;
}
}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

const std::set<std::string>& registered_node_types() { return node_registry(); }

bool register_node_type(const char* name) {
  node_registry().insert(name);
  return true;
}

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  // Keep a history-free alias: saving an op's own output would otherwise form a reference cycle.
  tensor_ = raw::alias(t);
  version_ = t.version();
}

Tensor SavedTensor::get(const Node& node) const {
  if (node.released) {
    throw AutogradError(std::string(node.name()) +
                        ": trying to backward through the graph a second time (its saved tensors were freed after "
                        "the first backward); pass retain_graph=true to the first backward if you need to");
  }
  if (tensor_.defined() && tensor_.version() != version_) {
    throw AutogradError(std::string(node.name()) + ": a tensor saved for backward was modified by an in-place "
                        "operation (version " + std::to_string(version_) + " when saved, now " +
                        std::to_string(tensor_.version()) + "); use the out-of-place op or clone() before modifying");
  }
  return tensor_;
}

}  // namespace syncgrad::autograd
