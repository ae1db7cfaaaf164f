// Graph nodes. A Node is the backward of one op application: apply() maps the gradients of its outputs to
// the gradients of its inputs, which flow along next_edges (edge i <-> input i; an edge without a node is an
// input that needs no gradient). Nodes carry a global sequence number so the engine can run the newest first.
//
// Every concrete node derives from NodeOf<Derived> and defines `static constexpr const char* kName`; that
// registers the node type, and the gradcheck coverage test fails for any registered type no gradcheck ran.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace syncgrad::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: this input needs no gradient
  uint32_t input_nr = 0;       // which of node's outputs (gradient slots) this edge feeds
  bool valid() const { return node != nullptr; }
};

using GradList = std::vector<Tensor>;  // undefined entries mean "zero gradient"

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Gradients of this node's outputs -> gradients of its inputs (one per next edge).
  virtual GradList apply(GradList&& grads) = 0;
  virtual const char* name() const = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void release_saved() {}

  uint64_t sequence_nr() const { return sequence_nr_; }
  // Scheduling priority among ready nodes: newest first; accumulators run as soon as they are ready.
  virtual uint64_t priority() const { return sequence_nr_; }
  // Number of gradient slots this node receives (outputs of the forward op).
  uint32_t num_outputs() const { return num_outputs_; }
  void set_num_outputs(uint32_t n) { num_outputs_ = n; }

  std::vector<Edge> next_edges;
  // Hooks on the gradient flowing into output slot `slot` (registered with Tensor::register_hook on a
  // non-leaf); each may replace the gradient.
  std::vector<std::pair<uint32_t, std::function<Tensor(const Tensor&)>>> pre_hooks;
  // Set once the saved tensors are released: a second backward through this node is an error.
  bool released = false;

 private:
  uint64_t sequence_nr_;
  uint32_t num_outputs_ = 1;
};

// Node type registry used by the gradcheck coverage test.
const std::set<std::string>& registered_node_types();
bool register_node_type(const char* name);

template <class Derived>
class NodeOf : public Node {
 public:
  NodeOf() { (void)&registered_; }
  const char* name() const override { return Derived::kName; }

 private:
  static inline const bool registered_ = register_node_type(Derived::kName);
};

// A tensor saved for backward, with the storage version it had when saved, so that an in-place change in
// between is reported instead of producing a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t);  // NOLINT: implicit on purpose
  // The saved tensor; throws AutogradError naming `node` if it was modified in place or released.
  Tensor get(const Node& node) const;
  void reset() { tensor_ = Tensor(); }
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  uint64_t version_ = 0;
};

}  // namespace syncgrad::autograd
