// Module: the base of every layer and model. It keeps ordered, named registries of parameters (leaf tensors
// that require grad), buffers (state such as running statistics) and child modules, and derives from them
// the dotted names ("conv1.weight"), train/eval mode, in-place device/dtype conversion, state dicts and the
// PyTorch-like tree print.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace syncgrad::nn {

using StateDict = std::vector<std::pair<std::string, Tensor>>;  // ordered

// Removes `prefix` from every key when all keys carry it (state saved from a wrapper such as
// DistributedDataParallel, whose keys start with "module."); otherwise leaves `state` as it is.
void consume_prefix_if_present(StateDict& state, const std::string& prefix);

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name);  // "Linear", shown in errors and printing
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The default throws Error naming the type: modules without a single-input forward (ModuleList, losses).
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }
  // A forward with several inputs (tokens and a mask, two towers, ...), e.g. model({tokens, mask}). The default
  // takes exactly one input and runs forward(input) (so wrappers such as DistributedDataParallel pass any model
  // on); a module with several inputs overrides it. Error naming the type and the count otherwise.
  virtual Tensor forward_many(const std::vector<Tensor>& inputs);
  Tensor operator()(const std::vector<Tensor>& inputs) { return forward_many(inputs); }

  // Registers `t` as a leaf parameter (history detached) and returns the registered handle; names must be
  // non-empty, without '.', and unique among this module's parameters, buffers and children.
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    register_child(name, m);
    return m;
  }

  // Registration order, own entries first, then each child's with "child." prefixed. A tensor registered
  // twice (shared weights) is listed once.
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;

  // Sets the mode of this module and all its descendants (dropout and batch norm behave differently).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // In place: each parameter/buffer keeps its identity (its handle now holds converted data), so optimizers
  // and other holders keep working; gradients are converted too. to(dtype) converts floating tensors only
  // (num_batches_tracked stays int64) and needs a floating dtype.
  void to(Device device);
  void to(DType dtype);

  // PyTorch's layout and key names: for each module (depth first, registration order) its parameters, then
  // its buffers. The values share data with the module (detached from autograd).
  StateDict state_dict() const;
  // Copies values in (converting between floating dtypes, across devices) after checking all keys: one
  // ShapeError (if any shape differs) or ValueError listing EVERY missing, unexpected and mis-shaped or
  // mis-typed key; missing/unexpected keys only count when `strict`. Nothing is copied when it throws.
  void load_state_dict(const StateDict& state, bool strict = true);

  void zero_grad(bool set_to_none = true);

  const std::string& type_name() const { return type_name_; }
  // PyTorch-like tree: "Type(extra)" for a leaf module, children indented as "(name): ..." lines.
  std::string to_string() const;

 protected:
  // The argument summary shown in to_string(), e.g. "in_features=784, out_features=256, bias=True".
  virtual std::string extra_repr() const { return ""; }

 private:
  struct NamedTensor {
    std::string name;
    Tensor tensor;
  };

  void register_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(StateDict& out, const std::string& prefix, bool recurse, bool buffers) const;
  void collect_state(StateDict& out, const std::string& prefix) const;
  // Applies `convert` to every parameter and buffer (each once) and installs the result in place.
  template <class Convert> void convert_in_place(const Convert& convert);

  std::string type_name_;
  bool training_ = true;
  std::deque<NamedTensor> parameters_;  // deque: the references register_* return stay valid
  std::deque<NamedTensor> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace syncgrad::nn
