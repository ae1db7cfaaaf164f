// The output of `syncgrad-bench scaling`: the tables on stdout (measured, sweeps, model inputs, model against
// measurement, predictions with the verdict), and the CSV and JSON files.
#pragma once

#include <cstdio>
#include <string>

#include "bench/scaling/scaling_analysis.h"
#include "bench/scaling/scaling_measure.h"
#include "bench/scaling/scaling_options.h"

namespace syncgrad::bench {

// What the run was and where: printed first and stored in the JSON.
struct RunContext {
  std::string task_description;  // e.g. "synthetic [1, 28, 28] f32 images, 10 classes"
  std::string load_average;      // /proc/loadavg's first three fields at start and at the end
  std::string date;              // UTC, ISO 8601
  int cores = 0;
};

void print_report(std::FILE* out, const ScalingOptions& options, const RunContext& context, const Measurements& m,
                  const Analysis& a);
// IOError naming the path when it cannot be written.
void write_csv(const std::string& path, const Measurements& m, const Analysis& a);
void write_json(const std::string& path, const ScalingOptions& options, const RunContext& context,
                const Measurements& m, const Analysis& a);

// Samples/s of a point over the single worker's (1 when there is none).
double speedup_of(const Measurements& m, const RunResult& r);

}  // namespace syncgrad::bench
