// The scaling bench's picture: speedup against workers (log-log) with the ideal line, the measured DP and DDP
// points, and the predicted DP and DDP curves of the first compute scale on each link.
#pragma once

#include "tools/bench/scaling_analysis.h"
#include "tools/bench/scaling_measure.h"
#include "tools/bench/svg_plot.h"

namespace syncgrad::bench {

PlotSpec speedup_plot(const ScalingOptions& options, const Measurements& m, const Analysis& a);

}  // namespace syncgrad::bench
