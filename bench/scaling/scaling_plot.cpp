// speedup_plot: one colour per link, solid DDP and dashed DP; measured DDP as circles, DP as squares.
#include "bench/scaling/scaling_plot.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/scaling/scaling_report.h"

namespace syncgrad::bench {

plot::PlotSpec speedup_plot(const ScalingOptions& options, const Measurements& m, const Analysis& a) {
  static const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"};
  plot::PlotSpec spec;
  spec.title = fmt::format(
      "syncgrad {}: speedup against workers (batch {} per worker{})", options.base.model, options.base.batch,
      a.curves.empty() ? "" : fmt::format("; predicted at compute x{:g}", options.compute_scales.front()));
  spec.x_label = "workers";
  spec.y_label = "speedup over one worker (samples/s)";
  double max_workers = options.workers.back();
  double min_speedup = 1;
  plot::Series measured_dp{"measured DP", {}, "#000000", false, false, "square"};
  plot::Series measured_ddp{"measured DDP", {}, "#000000", false, false, "circle"};
  for (const MeasuredPoint& p : m.points) {
    if (p.group != "main" || p.result.config.mode == "single") continue;
    const double speedup = speedup_of(m, p.result);
    min_speedup = std::min(min_speedup, speedup);
    (p.result.config.mode == "dp" ? measured_dp : measured_ddp).points.emplace_back(p.result.config.workers, speedup);
  }
  size_t color = 0;
  std::vector<plot::Series> predicted;
  for (const PredictedCurve& c : a.curves) {
    if (c.compute_scale != options.compute_scales.front()) continue;
    const std::string colour = kColors[color++ % std::size(kColors)];
    plot::Series ddp{"DDP, " + c.link.name, {}, colour, true, false, ""};
    plot::Series dp{"DP, " + c.link.name, {}, colour, true, true, ""};
    for (const PredictedPoint& p : c.points) {
      ddp.points.emplace_back(p.workers, p.ddp_speedup);
      dp.points.emplace_back(p.workers, p.dp_speedup);
      min_speedup = std::min({min_speedup, p.ddp_speedup, p.dp_speedup});
      max_workers = std::max<double>(max_workers, p.workers);
    }
    predicted.push_back(ddp);
    predicted.push_back(dp);
  }
  spec.x_min = 1;
  spec.x_max = std::max(2.0, max_workers);
  spec.y_min = std::max(1.0 / 64, std::min(0.5, min_speedup * 0.8));
  spec.y_max = spec.x_max;
  spec.series.push_back({"ideal (speedup = workers)", {{1, 1}, {spec.x_max, spec.x_max}}, "#7f7f7f", true, true, ""});
  spec.series.insert(spec.series.end(), predicted.begin(), predicted.end());
  if (!measured_dp.points.empty()) spec.series.push_back(measured_dp);
  if (!measured_ddp.points.empty()) spec.series.push_back(measured_ddp);
  return spec;
}

}  // namespace syncgrad::bench
