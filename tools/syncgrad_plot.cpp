// syncgrad-plot: pictures of syncgrad-train's metrics logs (--log-file, CSV or JSONL): loss, accuracy,
// throughput, communication, MFU and memory against the optimizer step, several runs overlaid with a legend
// (DP against DDP, world 1 against 2, fp32 against bf16, ...). SVG, and PNG too where rsvg-convert is on PATH.
//   syncgrad-plot --out plots --label "world 1=w1.csv" --label "world 2=w2.csv"
//   syncgrad-plot --metric loss --out loss.svg run.jsonl
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tensor/errors.h"
#include "tools/plot/metrics_file.h"
#include "tools/plot/metrics_plot.h"
#include "tools/plot/png_convert.h"

namespace plot = syncgrad::plot;
namespace fs = std::filesystem;

namespace {

struct PlotOptions {
  std::string out = ".";
  std::string metric = "all";
  std::vector<std::string> labels;  // NAME=PATH
  std::vector<std::string> logs;
  bool png = true;
};

// The logs in command-line order (--label ones first, then the others), each once, with its legend name: the
// --label NAME, else the file name without its extension.
std::vector<plot::LabelledLog> read_runs(const PlotOptions& o) {
  std::vector<std::pair<std::string, std::string>> named;  // label, path
  for (const std::string& entry : o.labels) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      throw syncgrad::ValueError("--label \"" + entry + "\": use NAME=PATH, e.g. --label \"world 2=w2.csv\"");
    }
    named.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const std::string& path : o.logs) {
    const bool labelled = std::any_of(named.begin(), named.end(), [&](const auto& n) { return n.second == path; });
    if (!labelled) named.emplace_back(fs::path(path).stem().string(), path);
  }
  if (named.empty()) throw syncgrad::ValueError("no metrics log given: name one or more (syncgrad-train --log-file)");
  std::vector<plot::LabelledLog> runs;
  for (const auto& [label, path] : named) runs.push_back({label, plot::read_metrics(path)});
  return runs;
}

// Where each metric's picture goes: --out FILE.svg for one metric, else DIR/<metric>.svg.
std::string svg_path(const PlotOptions& o, const std::string& metric) {
  if (fs::path(o.out).extension() == ".svg") return o.out;
  return (fs::path(o.out) / (metric + ".svg")).string();
}

void draw(const PlotOptions& o, const std::string& metric, const std::vector<plot::LabelledLog>& runs) {
  std::vector<std::string> notes;
  const plot::PlotSpec spec = plot::metrics_plot(metric, runs, notes);
  for (const std::string& note : notes) std::fprintf(stderr, "syncgrad-plot: note: %s\n", note.c_str());
  const std::string svg = svg_path(o, metric);
  plot::write_svg(svg, spec);
  std::string written = svg;
  if (o.png && plot::rsvg_convert_available()) {
    const std::string png = fs::path(svg).replace_extension(".png").string();
    plot::svg_to_png(svg, png);
    written += " and " + png;
  }
  std::printf("wrote %s (%zu series)\n", written.c_str(), spec.series.size());
}

int run(const PlotOptions& o) {
  const bool one_file = fs::path(o.out).extension() == ".svg";
  if (one_file && o.metric == "all") {
    throw syncgrad::ValueError("--out " + o.out + " is one file: choose the one metric for it with --metric (" +
                               "or give a directory for all of them)");
  }
  if (!one_file) {
    std::error_code error;
    fs::create_directories(o.out, error);
    if (!fs::is_directory(o.out)) {
      throw syncgrad::IOError("--out " + o.out + ": not a directory, and one cannot be made there" +
                              (error ? " (" + error.message() + ")" : std::string()) +
                              "; give a directory, or a file ending in .svg with --metric");
    }
  }
  const std::vector<plot::LabelledLog> runs = read_runs(o);
  if (o.metric != "all") {
    draw(o, o.metric, runs);
    return 0;
  }
  for (const std::string& metric : plot::metric_names()) {
    if (!plot::has_metric(metric, runs)) {
      std::fprintf(stderr, "syncgrad-plot: note: no %s values in the logs; no %s.svg\n", metric.c_str(),
                   metric.c_str());
      continue;
    }
    draw(o, metric, runs);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"syncgrad-plot: draw syncgrad-train metrics logs (--log-file, .csv or .jsonl) against the optimizer "
               "step, one SVG per metric with the runs overlaid (PNG too where rsvg-convert is on PATH)"};
  PlotOptions o;
  std::string metrics_help = "the metric to draw: all (each one the logs have values of)";
  for (const std::string& m : plot::metric_names()) metrics_help += ", " + m;
  std::vector<std::string> choices = plot::metric_names();
  choices.push_back("all");
  app.add_option("--metric", o.metric, metrics_help)->check(CLI::IsMember(choices))->capture_default_str();
  app.add_option("--out", o.out, "a directory for <metric>.svg (made if missing), or one FILE.svg with --metric")
      ->capture_default_str();
  app.add_option("--label", o.labels, "NAME=PATH: draw the log PATH as NAME in the legend (default: its file name)")
      ->type_name("NAME=PATH");
  app.add_flag("!--no-png", o.png, "write SVG only, even where rsvg-convert is available");
  app.add_option("logs", o.logs, "metrics logs written by syncgrad-train --log-file")->type_name("LOG");
  try {
    app.parse(argc, argv);
    return run(o);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const syncgrad::Error& e) {
    std::fprintf(stderr, "syncgrad-plot: error: %s\n", e.what());
    return 1;
  }
}
