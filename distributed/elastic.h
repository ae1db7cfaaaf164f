// Elastic resume: whether a job may continue a checkpoint saved at another world size. It may when the program
// says so (syncgrad-train --elastic, TrainingState::allow_world_size_change) or the environment has
// SYNCGRAD_ELASTIC=1 (syncgrad-launch exports it to the ranks of an elastic job). The data then continues from
// the epoch's global position (data/data_position.h); without it a different world size is refused, naming both
// sizes and how to allow the change.
#pragma once

#include <cstdint>
#include <string>

namespace syncgrad::distributed {

inline constexpr const char* kElasticEnvironmentVariable = "SYNCGRAD_ELASTIC";

// SYNCGRAD_ELASTIC: "1" true; unset, "" or "0" false; ValueError naming the value for anything else.
bool elastic_requested_by_environment();

// ValueError unless saved_world == world or allowed: "<what> was saved by a job of world size 2 but this one
// has 1; resume with 2 processes, or <how_to_allow> to continue at world size 1 (...)".
void check_world_size_change(int64_t saved_world, int64_t world, bool allowed, const std::string& what,
                             const std::string& how_to_allow);

}  // namespace syncgrad::distributed
