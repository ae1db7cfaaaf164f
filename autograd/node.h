// Graph nodes. A Node is the backward of one op application: apply() maps the gradients of its outputs to
// the gradients of its inputs, which flow along next_edges (edge i <-> input i; an edge without a node is an
// input that needs no gradient). Nodes carry a global sequence number so the engine can run the newest first.
//
// An op records its backward as a function beside its forward, with the node's name written once:
//   autograd::record<"ExpBackward">({&t}, {&out}, [result = SavedTensor(out)](const Node& node, GradList&& g) {
//     return GradList{raw::mul(g[0], result.get(node))};
//   });
// The function owns what the backward saved; releasing the node destroys it. Every (name, function) pair
// registers at static initialization, so the gradcheck coverage test knows each node type even if it never
// ran, and fails for any type no gradcheck covered or any name two different backwards share.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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

  // Frees what the backward saved (the engine calls it after a backward without retain_graph); from then
  // on a backward through this node is an error.
  void release();
  bool released() const { return released_; }
  // Throws the AutogradError for a second backward through a released node.
  void check_not_released() const;

  // Whether input `i` wants a gradient (its edge leads to a node).
  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }

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

 protected:
  // What release() frees besides setting the flag; FunctionNode destroys its backward function here.
  virtual void release_saved() {}

 private:
  uint64_t sequence_nr_;
  uint32_t num_outputs_ = 1;
  bool released_ = false;
};

// Node type registry used by the gradcheck coverage test. `type` identifies the C++ type behind the name,
// so that one name given to two different backwards is caught (duplicate_node_types()).
const std::set<std::string>& registered_node_types();
const std::set<std::string>& duplicate_node_types();
bool register_node_type(const char* name, const void* type);

// A node type's name as a template argument: record<"ExpBackward">(...), NamedNode<"AccumulateGrad">.
struct NodeName {
  static constexpr size_t kCapacity = 64;
  char text[kCapacity] = {};
  consteval NodeName(const char* name) {  // NOLINT: implicit, so a string literal is a NodeName
    size_t n = 0;
    while (name[n] != '\0') ++n;
    if (n == 0 || n >= kCapacity) throw "NodeName: a node name needs 1 to 63 characters";
    for (size_t i = 0; i < n; ++i) text[i] = name[i];
  }
};

// Base of a hand-written node class (one with state of its own beyond saved tensors, e.g. AccumulateGrad):
// gives it its name and registers it.
template <NodeName Name>
class NamedNode : public Node {
 public:
  NamedNode() { (void)&registered_; }
  const char* name() const override { return Name.text; }

 private:
  static inline const char type_tag_ = 0;  // its address tells this type from others of the same name
  static inline const bool registered_ = register_node_type(Name.text, &type_tag_);
};

// The node an op records: `backward` is called as backward(node, grads) or backward(grads) and returns one
// gradient per input; it owns the tensors it saved, and is destroyed when the node is released.
template <NodeName Name, class Backward>
class FunctionNode final : public Node {
 public:
  explicit FunctionNode(Backward backward) : backward_(std::move(backward)) { (void)&registered_; }
  const char* name() const override { return Name.text; }

  GradList apply(GradList&& grads) override {
    check_not_released();
    if constexpr (std::invocable<Backward&, const Node&, GradList&&>) {
      return (*backward_)(static_cast<const Node&>(*this), std::move(grads));
    } else {
      return (*backward_)(std::move(grads));
    }
  }

 private:
  void release_saved() override { backward_.reset(); }

  std::optional<Backward> backward_;
  static inline const char type_tag_ = 0;  // its address tells this type from others of the same name
  static inline const bool registered_ = register_node_type(Name.text, &type_tag_);
};

// A tensor saved for backward, with the storage version it had when saved, so that an in-place change in
// between is reported instead of producing a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t);  // NOLINT: implicit on purpose
  // The saved tensor; throws AutogradError naming `node` if it was modified in place or released.
  Tensor get(const Node& node) const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  uint64_t version_ = 0;
};

// Records one op application: node's next edges come from `inputs`, and each of `outputs` becomes the
// corresponding output of `node`. Call only when any_requires_grad(inputs).
void record(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<const Tensor*> outputs);
void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

// Records `backward` as the node named `Name` of one op application (see the top of this file).
template <NodeName Name, class Backward>
void record(std::initializer_list<const Tensor*> inputs, std::initializer_list<const Tensor*> outputs,
            Backward&& backward) {
  record(std::make_shared<FunctionNode<Name, std::decay_t<Backward>>>(std::forward<Backward>(backward)), inputs,
         outputs);
}
template <NodeName Name, class Backward>
void record(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, Backward&& backward) {
  record(std::make_shared<FunctionNode<Name, std::decay_t<Backward>>>(std::forward<Backward>(backward)), inputs,
         outputs);
}

}  // namespace syncgrad::autograd
