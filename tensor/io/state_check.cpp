// check_state_matches: compares a loaded checkpoint's names, shapes and dtypes against what a model expects.
#include <map>
#include <sstream>

#include "tensor/errors.h"
#include "tensor/io/safetensors.h"
#include "tensor/ops/views.h"

namespace syncgrad::io {

namespace {

std::string describe(const Tensor& t) { return std::string(dtype_name(t.dtype())) + " " + shape_str(t.sizes()); }

}  // namespace

void check_state_matches(const NamedTensors& expected, const NamedTensors& loaded, const std::string& file) {
  std::map<std::string, const Tensor*> loaded_by_name;
  for (const auto& [name, tensor] : loaded) loaded_by_name.emplace(name, &tensor);
  std::map<std::string, const Tensor*> expected_by_name;
  for (const auto& [name, tensor] : expected) expected_by_name.emplace(name, &tensor);

  std::vector<std::string> problems;
  for (const auto& [name, tensor] : expected) {
    auto found = loaded_by_name.find(name);
    if (found == loaded_by_name.end()) {
      problems.push_back("missing: '" + name + "' (" + describe(tensor) + ")");
      continue;
    }
    const Tensor& other = *found->second;
    if (other.sizes() != tensor.sizes()) {
      problems.push_back("shape mismatch: '" + name + "' expected " + shape_str(tensor.sizes()) + ", found " +
                         shape_str(other.sizes()));
    }
    if (other.dtype() != tensor.dtype()) {
      problems.push_back("dtype mismatch: '" + name + "' expected " + dtype_name(tensor.dtype()) + ", found " +
                         dtype_name(other.dtype()));
    }
  }
  for (const auto& [name, tensor] : loaded) {
    if (expected_by_name.count(name) == 0) problems.push_back("unexpected: '" + name + "' (" + describe(tensor) + ")");
  }
  if (problems.empty()) return;

  std::ostringstream message;
  message << "checkpoint '" << file << "' does not match the expected state (" << problems.size() << " problem"
          << (problems.size() == 1 ? "" : "s") << "):";
  for (const std::string& problem : problems) message << "\n  " << problem;
  message << "\nhint: was it saved from a different model or configuration?";
  throw ValueError(message.str());
}

}  // namespace syncgrad::io
