// Sequential and ModuleList: children registered under their positions.
#include "nn/container.h"

#include <string>

#include "tensor/check.h"

namespace syncgrad::nn {

namespace {

const std::shared_ptr<Module>& checked_at(const std::vector<std::shared_ptr<Module>>& modules, size_t index,
                                          const std::string& type) {
  SYNCGRAD_CHECK(index < modules.size(), IndexError, type, "[", index, "]: index out of range for ", modules.size(),
                 " modules");
  return modules[index];
}

}  // namespace

Sequential::Sequential() : Module("Sequential") {}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(std::to_string(modules_.size()), std::move(module)));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) x = m->forward(x);
  return x;
}

const std::shared_ptr<Module>& Sequential::operator[](size_t index) const {
  return checked_at(modules_, index, type_name());
}

ModuleList::ModuleList() : Module("ModuleList") {}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) : ModuleList() {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(std::to_string(modules_.size()), std::move(module)));
}

const std::shared_ptr<Module>& ModuleList::operator[](size_t index) const {
  return checked_at(modules_, index, type_name());
}

}  // namespace syncgrad::nn
