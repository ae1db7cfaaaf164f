// Containers of modules: Sequential (children "0", "1", ... applied in order) and ModuleList (an indexable
// list of registered children without a forward of its own).
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "nn/module.h"

namespace syncgrad::nn {

class Sequential : public Module {
 public:
  Sequential();
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);

  // Registers `module` as child std::to_string(size()).
  void push_back(std::shared_ptr<Module> module);
  // Feeds the input through every child in order; an empty Sequential returns its input.
  Tensor forward(const Tensor& input) override;

  size_t size() const { return modules_.size(); }
  // Out-of-range indices are an IndexError.
  const std::shared_ptr<Module>& operator[](size_t index) const;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

class ModuleList : public Module {
 public:
  ModuleList();
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);

  // Registers `module` as child std::to_string(size()).
  void push_back(std::shared_ptr<Module> module);

  size_t size() const { return modules_.size(); }
  // Out-of-range indices are an IndexError.
  const std::shared_ptr<Module>& operator[](size_t index) const;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace syncgrad::nn
