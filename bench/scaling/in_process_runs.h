// The bench's in-process measurements: the model without any wrapper ("single"), DataParallel over worker
// threads ("dp"), and the serial costs of DataParallel's replicate/gather/reduce that the scaling model needs.
// DataParallel's memory per worker comes from memory tags (worker i: tag i + 1; tensor/memory_tag.h).
#pragma once

#include "bench/scaling/run_config.h"
#include "bench/scaling/step_profile.h"

namespace syncgrad::bench {

// config.mode "single" (workers must be 1) or "dp".
RunResult run_in_process(const RunConfig& config);

// Fills profile's replica_copy_seconds, gradient_clone_seconds, gradient_add_seconds, output_copy_seconds and
// wake_seconds (medians of `repeats` timings of exactly what DataParallel does on the caller's thread).
void measure_dp_serial_costs(const RunConfig& config, StepProfile& profile, int repeats = 30);

}  // namespace syncgrad::bench
