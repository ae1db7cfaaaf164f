// MFU from the counted model FLOPs and the measured FMA peak (see mfu.h).
#include "tools/train/mfu.h"

#include <cstdio>

#include "tools/train/cpu_peak.h"
#include "tools/train/model_flops.h"

namespace syncgrad::train {

std::optional<double> MfuBasis::percent(double examples_per_second) const {
  if (!known()) return std::nullopt;
  return 100.0 * examples_per_second * flops_per_example / (peak_per_core * cores);
}

std::string MfuBasis::describe() const {
  if (!known()) return "";
  char text[160];
  std::snprintf(text, sizeof text, "MFU against a measured FMA peak of %.0f GFLOP/s per core x %d core(s), %.3g "
                "MFLOP per example", peak_per_core / 1e9, cores, flops_per_example / 1e6);
  return text;
}

MfuBasis mfu_basis(const Task& task, const nn::Module& model, Device device, int cores) {
  MfuBasis basis;
  const auto train = task.train_data();
  if (!device.is_cpu() || !train || train->size() == 0) return basis;
  basis.flops_per_example = training_flops_per_example(model, train->get(0).data.sizes());
  if (basis.flops_per_example <= 0) return basis;  // a model whose FLOPs are not counted: no peak needed
  basis.peak_per_core = fma_peak_flops_per_core();
  basis.cores = cores;
  return basis;
}

}  // namespace syncgrad::train
