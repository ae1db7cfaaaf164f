// An optimizer's state_dict in a safetensors file: its tensors under "optimizer.<key>" (e.g.
// "optimizer.state.3.exp_avg") and its param groups' options as JSON text for a metadata field
// ("optimizer_groups"). Shared by syncgrad-train's checkpoints and distributed::TrainingState.
#pragma once

#include <string>

#include "optim/optimizer.h"
#include "tensor/io/safetensors.h"

namespace syncgrad::optim {

inline constexpr const char* kOptimizerTensorPrefix = "optimizer.";
inline constexpr const char* kOptimizerGroupsField = "optimizer_groups";

// The state's tensors, each name prefixed with "optimizer.".
io::NamedTensors optimizer_tensors(const OptimizerStateDict& state);
// The groups as a JSON list of {option: number} objects.
std::string optimizer_groups_json(const OptimizerStateDict& state);
// The state from a file's tensors (all under "optimizer.") and its groups' JSON; ValueError naming `file` for a
// tensor of another name or JSON that is not a list of {option: number} objects.
OptimizerStateDict optimizer_state_from(const io::NamedTensors& tensors, const std::string& groups_json,
                                        const std::string& file);

}  // namespace syncgrad::optim
