// The quantities syncgrad-plot draws and how each becomes a PlotSpec (see metrics_plot.h).
#include "tools/plot/metrics_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::plot {
namespace {

// One column of one kind of row, drawn per run.
struct Curve {
  Curve(std::string column, std::string kind = "train", std::string suffix = "", bool dashed = false,
        bool required = true, double scale = 1)
      : column(std::move(column)), kind(std::move(kind)), suffix(std::move(suffix)), dashed(dashed),
        required(required), scale(scale) {}
  std::string column;
  std::string kind;    // which rows carry it: "train" or "eval"
  std::string suffix;  // after the run's label in the legend
  bool dashed;
  bool required;  // a log without the column is an error (else the curve is left out for it)
  double scale;   // e.g. 100 for a fraction shown in percent
};

struct Metric {
  std::string name, title, y_label;
  std::vector<Curve> curves;
  bool from_zero;  // the y axis starts at 0
};

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t kMarkersUpTo = 30;  // series with at most this many points show each point

const std::vector<Metric>& metrics() {
  static const std::vector<Metric> all = {
      {"loss", "training loss", "loss",
       {{"loss"}, {"eval_loss", "eval", " validation", true, false}}, false},
      {"accuracy", "held-out accuracy", "test accuracy (%)", {{"eval_accuracy", "eval", "", false, true, 100}},
       false},
      {"throughput", "throughput", "samples/s (all ranks)", {{"samples_per_second"}}, true},
      {"communication", "DDP gradient communication per step", "ms per step",
       {{"comm_ms_per_step", "train", " total"}, {"exposed_comm_ms_per_step", "train", " exposed", true}}, true},
      {"mfu", "model FLOPs utilisation", "MFU (%)", {{"mfu_percent"}}, true},
      {"memory", "peak memory", "MiB",
       {{"peak_memory_mib", "train", " tensors"}, {"peak_rss_mib", "train", " RSS", true}}, true},
  };
  return all;
}

const Metric& find_metric(const std::string& name) {
  for (const Metric& m : metrics()) {
    if (m.name == name) return m;
  }
  std::string known;
  for (const std::string& n : metric_names()) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("--metric: no metric \"" + name + "\" (known: " + known + ")");
}

std::vector<std::pair<double, double>> points_of(const MetricsFile& log, const Curve& curve) {
  std::vector<std::pair<double, double>> points;
  for (const MetricsRecord& record : log.records) {
    if (record.kind != curve.kind) continue;
    const std::optional<double> value = record.get(curve.column);
    if (value && std::isfinite(*value)) points.emplace_back(*record.get("step"), *value * curve.scale);
  }
  return points;
}

// Throughput in tokens when every run counts tokens (the text task), else in samples.
Metric resolve(const Metric& metric, const std::vector<LabelledLog>& runs) {
  if (metric.name != "throughput" || runs.empty()) return metric;
  const bool tokens = std::all_of(runs.begin(), runs.end(), [](const LabelledLog& run) {
    return !points_of(run.log, Curve("tokens_per_second")).empty();
  });
  if (!tokens) return metric;
  Metric in_tokens = metric;
  in_tokens.y_label = "tokens/s (all ranks)";
  in_tokens.curves = {Curve("tokens_per_second")};
  return in_tokens;
}

}  // namespace

const std::vector<std::string>& metric_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Metric& m : metrics()) n.push_back(m.name);
    return n;
  }();
  return names;
}

bool has_metric(const std::string& name, const std::vector<LabelledLog>& runs) {
  const auto known = metric_names();
  if (std::find(known.begin(), known.end(), name) == known.end()) return false;
  const Metric metric = resolve(find_metric(name), runs);
  for (const LabelledLog& run : runs) {
    for (const Curve& curve : metric.curves) {
      if (!points_of(run.log, curve).empty()) return true;
    }
  }
  return false;
}

PlotSpec metrics_plot(const std::string& name, const std::vector<LabelledLog>& runs, std::vector<std::string>& notes) {
  const Metric metric = resolve(find_metric(name), runs);
  PlotSpec spec;
  spec.title = metric.title;
  spec.x_label = "optimizer step";
  spec.y_label = metric.y_label;
  spec.log2_x = spec.log2_y = false;
  double x_max = 0, y_min = std::numeric_limits<double>::infinity(), y_max = -y_min;
  for (size_t r = 0; r < runs.size(); ++r) {
    const LabelledLog& run = runs[r];
    bool drawn = false;
    for (const Curve& curve : metric.curves) {
      SYNCGRAD_CHECK(!curve.required || run.log.has_column(curve.column), ValueError, run.log.path, ": the log has no ",
                     curve.column, " column, which --metric ", metric.name,
                     " needs (a log of an older syncgrad-train, or of another program?)");
      Series series;
      series.name = run.label + curve.suffix;
      series.color = kColors[r % std::size(kColors)];
      series.dashed = curve.dashed;
      series.points = points_of(run.log, curve);
      if (series.points.empty()) continue;
      if (series.points.size() <= kMarkersUpTo) series.marker = curve.dashed ? "square" : "circle";
      for (const auto& [x, y] : series.points) {
        x_max = std::max(x_max, x);
        y_min = std::min(y_min, y);
        y_max = std::max(y_max, y);
      }
      spec.series.push_back(std::move(series));
      drawn = true;
    }
    if (!drawn) notes.push_back(metric.name + ": " + run.label + " (" + run.log.path + ") has no " +
                                metric.curves.front().column + " values; left out");
  }
  // The dashed curves' meaning, when there are some: "(dashed: validation)", "(dashed: exposed)".
  const auto dashed = std::find_if(metric.curves.begin(), metric.curves.end(), [](const Curve& c) { return c.dashed; });
  if (dashed != metric.curves.end() &&
      std::any_of(spec.series.begin(), spec.series.end(), [](const Series& s) { return s.dashed; })) {
    spec.title += " (dashed:" + dashed->suffix + ")";
  }
  SYNCGRAD_CHECK(!spec.series.empty(), ValueError, "--metric ", metric.name, ": none of the logs has ",
                 metric.curves.front().column, " values",
                 metric.name == "communication" ? " (only DDP runs, under syncgrad-launch, have them)"
                 : metric.name == "accuracy"    ? " (only classification runs have an accuracy; a GPT's held-out "
                                                  "metric is its validation loss, in --metric loss)"
                                                : "");
  std::tie(spec.x_min, spec.x_max) = nice_linear_range(0, std::max(1.0, x_max));
  std::tie(spec.y_min, spec.y_max) = nice_linear_range(metric.from_zero ? std::min(0.0, y_min) : y_min, y_max);
  return spec;
}

}  // namespace syncgrad::plot
