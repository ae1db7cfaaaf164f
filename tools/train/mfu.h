// Model FLOPs utilisation (MFU) of a syncgrad-train run: the model FLOPs the job's examples per second stand
// for (tools/train/model_flops.h) over the peak FLOP rate of the cores it trains on. The peak is measured, not
// looked up: the float32 FMA rate of one core (tools/train/cpu_peak.h: independent AVX-512 or AVX2 fused
// multiply-adds, the best of six short runs at start-up) x --threads x replicas (--dp-workers under
// --parallel dp) x world size. A GPU's peak is not measured, so CUDA runs have no MFU; nor do models whose
// FLOPs model_flops.h does not count.
#pragma once

#include <optional>
#include <string>

#include "tensor/device.h"
#include "tools/train/task.h"

namespace syncgrad::train {

struct MfuBasis {
  double flops_per_example = 0;  // training FLOPs (forward + backward) of one example
  double peak_per_core = 0;      // measured FLOP/s of one core
  int cores = 0;                 // of the whole job
  bool known() const { return flops_per_example > 0 && peak_per_core > 0 && cores > 0; }
  // Percent of the job's peak that `examples_per_second` (all ranks) stands for; none when not known().
  std::optional<double> percent(double examples_per_second) const;
  // For the start-up line, e.g. "MFU against a measured FMA peak of 116 GFLOP/s per core x 2 cores, 1.61
  // MFLOP/example"; "" when not known().
  std::string describe() const;
};

// The basis of a run of `model` (unwrapped) from `task`'s training examples, with `cores` cores in all, on
// `device`.
MfuBasis mfu_basis(const Task& task, const nn::Module& model, Device device, int cores);

}  // namespace syncgrad::train
