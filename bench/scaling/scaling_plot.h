// The scaling bench's picture: speedup against workers (log-log) with the ideal line, the measured DP and DDP
// points, and the predicted DP and DDP curves of the first compute scale on each link.
#pragma once

#include "bench/scaling/scaling_analysis.h"
#include "bench/scaling/scaling_measure.h"
#include "tools/plot/svg_plot.h"

namespace syncgrad::bench {

plot::PlotSpec speedup_plot(const ScalingOptions& options, const Measurements& m, const Analysis& a);

}  // namespace syncgrad::bench
