// Node sequence numbers and release, the node type registry and saved-tensor version checks.
#include "autograd/node.h"

#include <map>

#include "tensor/check.h"
#include "tensor/ops/views.h"

namespace syncgrad::autograd {
namespace {
std::atomic<uint64_t> next_sequence_nr{0};

struct NodeRegistry {
  std::set<std::string> names;
  std::map<std::string, const void*> type_of;  // name -> the first type registered under it
  std::set<std::string> duplicates;
};

NodeRegistry& node_registry() {
  static NodeRegistry registry;
  return registry;
}
}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

void Node::release() {
  release_saved();
  released_ = true;
}

void Node::check_not_released() const {
  SYNCGRAD_CHECK(!released_, AutogradError, name(),
                 ": trying to backward through the graph a second time (its saved tensors were freed after "
                 "the first backward); pass retain_graph=true to the first backward if you need to");
}

const std::set<std::string>& registered_node_types() { return node_registry().names; }
const std::set<std::string>& duplicate_node_types() { return node_registry().duplicates; }

bool register_node_type(const char* name, const void* type) {
  NodeRegistry& registry = node_registry();
  registry.names.insert(name);
  auto [it, inserted] = registry.type_of.emplace(name, type);
  if (!inserted && it->second != type) registry.duplicates.insert(name);
  return true;
}

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  // Keep a history-free alias: saving an op's own output would otherwise form a reference cycle.
  tensor_ = raw::alias(t);
  version_ = t.version();
}

Tensor SavedTensor::get(const Node& node) const {
  node.check_not_released();
  SYNCGRAD_CHECK(!tensor_.defined() || tensor_.version() == version_, AutogradError, node.name(),
                 ": a tensor saved for backward was modified by an in-place operation (version ", version_,
                 " when saved, now ", tensor_.version(), "); use the out-of-place op or clone() before modifying");
  return tensor_;
}

}  // namespace syncgrad::autograd
