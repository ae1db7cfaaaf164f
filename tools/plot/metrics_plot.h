// syncgrad-plot's pictures: one quantity (loss, accuracy, throughput, communication, MFU, memory) of one or
// more metrics logs against the optimizer step, one colour per run, drawn with the shared SVG writer
// (svg_plot.h). A quantity is one or two of the log's columns per run (e.g. total and exposed communication,
// training and validation loss); a run without values in them (communication of a single process) is left out
// of that picture, with a note.
#pragma once

#include <string>
#include <vector>

#include "tools/plot/metrics_file.h"
#include "tools/plot/svg_plot.h"

namespace syncgrad::plot {

struct LabelledLog {
  std::string label;  // the legend's name of the run
  MetricsFile log;
};

// The quantities, in the order "all" draws them: loss, accuracy, throughput, communication, mfu, memory.
const std::vector<std::string>& metric_names();

// The picture of `metric` over `runs`. ValueError for an unknown metric, for a log that lacks one of the
// metric's columns altogether (naming the log and the column: an older syncgrad's log, or another program's),
// and when no run has any value of it. Runs with the columns but no values are listed in `notes`.
PlotSpec metrics_plot(const std::string& metric, const std::vector<LabelledLog>& runs,
                      std::vector<std::string>& notes);

// Whether some run has a value of `metric` (an unknown metric has none).
bool has_metric(const std::string& metric, const std::vector<LabelledLog>& runs);

}  // namespace syncgrad::plot
