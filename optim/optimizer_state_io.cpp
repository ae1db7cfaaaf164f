// Optimizer state <-> safetensors tensors and metadata (see optimizer_state_io.h).
#include "optim/optimizer_state_io.h"

#include <nlohmann/json.hpp>

#include "tensor/errors.h"

namespace syncgrad::optim {

io::NamedTensors optimizer_tensors(const OptimizerStateDict& state) {
  io::NamedTensors tensors;
  for (const auto& [name, t] : state.tensors) tensors.emplace_back(kOptimizerTensorPrefix + name, t);
  return tensors;
}

std::string optimizer_groups_json(const OptimizerStateDict& state) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : state.groups) groups.push_back(g);
  return groups.dump();
}

OptimizerStateDict optimizer_state_from(const io::NamedTensors& tensors, const std::string& groups_json,
                                        const std::string& file) {
  const std::string prefix = kOptimizerTensorPrefix;
  OptimizerStateDict state;
  for (const auto& [name, t] : tensors) {
    if (name.rfind(prefix, 0) != 0) throw ValueError("checkpoint " + file + ": unexpected tensor \"" + name + "\"");
    state.tensors.emplace_back(name.substr(prefix.size()), t);
  }
  try {
    for (const auto& g : nlohmann::json::parse(groups_json)) {
      state.groups.push_back(g.get<std::map<std::string, double>>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("checkpoint " + file + ": metadata field \"" + kOptimizerGroupsField +
                     "\" is not a JSON list of {option: number} objects (" + e.what() +
                     "); the file is damaged or was not written by syncgrad");
  }
  return state;
}

}  // namespace syncgrad::optim
