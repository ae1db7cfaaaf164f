// syncgrad-plot's parts: reading CSV and JSONL metrics logs (old and new columns, every malformed line named by
// file:line, mixed formats), and the SVG of a metric over several runs (one series per run and curve, the
// legend's labels, the axis labels, nice ticks; a log without the column refused).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tensor/errors.h"
#include "tests/check_error.h"
#include "tools/plot/metrics_file.h"
#include "tools/plot/metrics_plot.h"
#include "tools/plot/svg_plot.h"
#include "tools/train/metrics_log.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

std::string header() {
  std::string h;
  for (const std::string& c : train::kMetricsColumns) h += (h.empty() ? "" : ",") + c;
  return h;
}

std::string csv_row(const train::MetricsRow& row) {
  std::string line;
  for (const std::string& cell : train::metrics_cells(row)) line += (line.empty() ? "" : ",") + cell;
  return line;
}

train::MetricsRow train_row(int64_t step, double loss, std::optional<double> comm = std::nullopt) {
  train::MetricsRow row;
  row.step = step;
  row.epoch = 1;
  row.loss = loss;
  row.lr = 0.05;
  row.samples_per_second = 1000 + step;
  row.comm_ms_per_step = comm;
  if (comm) row.exposed_comm_ms_per_step = *comm / 2;
  return row;
}

train::MetricsRow eval_row(int64_t step, double accuracy) {
  train::MetricsRow row;
  row.kind = "eval";
  row.step = step;
  row.epoch = 1;
  row.eval_accuracy = accuracy;
  return row;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

plot::MetricsFile ddp_log() {
  return plot::parse_metrics("ddp.csv", header() + "\n" + csv_row(train_row(10, 2.0, 4.0)) + "\n" +
                                            csv_row(train_row(20, 1.5, 3.0)) + "\n" + csv_row(eval_row(20, 0.7)) +
                                            "\n");
}

plot::MetricsFile single_log() {
  return plot::parse_metrics("one.csv", header() + "\n" + csv_row(train_row(10, 2.2)) + "\n" +
                                            csv_row(train_row(20, 1.7)) + "\n" + csv_row(eval_row(20, 0.65)) + "\n");
}

}  // namespace

TEST_CASE("metrics logs: CSV and JSONL rows, empty cells and nulls absent, eval rows told apart") {
  const plot::MetricsFile csv = ddp_log();
  CHECK_FALSE(csv.jsonl);
  REQUIRE(csv.records.size() == 3);
  CHECK(csv.records[0].line == 2);
  CHECK(csv.records[0].kind == "train");
  CHECK(*csv.records[0].get("loss") == doctest::Approx(2.0));
  CHECK(*csv.records[0].get("comm_ms_per_step") == doctest::Approx(4.0));
  CHECK_FALSE(csv.records[0].get("loss_scale").has_value());  // no GradScaler: empty, not 0
  CHECK(csv.records[2].kind == "eval");
  CHECK(*csv.records[2].get("eval_accuracy") == doctest::Approx(0.7));
  CHECK_FALSE(csv.records[2].get("loss").has_value());

  const plot::MetricsFile jsonl = plot::parse_metrics(
      "run.jsonl", "{\"step\":10,\"loss\":2.5,\"loss_scale\":null,\"kind\":\"train\"}\n"
                   "{\"step\":20,\"kind\":\"eval\",\"eval_loss\":2.1}\n");
  CHECK(jsonl.jsonl);
  REQUIRE(jsonl.records.size() == 2);
  CHECK_FALSE(jsonl.records[0].get("loss_scale").has_value());
  CHECK(jsonl.records[1].kind == "eval");
  CHECK(jsonl.has_column("eval_loss"));

  // A log of an older syncgrad-train (nine columns, no kind): train rows.
  const plot::MetricsFile old = plot::parse_metrics(
      "old.csv",
      "step,epoch,loss,lr,samples_per_second,elapsed_seconds,data_wait_percent,loss_scale,skipped_steps\n"
      "10,1,2.3,0.05,900,1.5,2.0,1,0\n");
  CHECK(old.records.at(0).kind == "train");
  CHECK_FALSE(old.has_column("comm_ms_per_step"));
}

TEST_CASE("metrics logs: malformed lines, mixed formats and missing files are errors naming file:line") {
  const std::string h = header();
  check_error<ValueError>([&] { plot::parse_metrics("a.csv", h + "\n1,2,3\n"); },
                          {"a.csv:2:", "3 cells", "columns"});
  check_error<ValueError>([&] { plot::parse_metrics("a.csv", h + "\n" + csv_row(train_row(10, 1)) + "\n{\"step\":1}\n"); },
                          {"a.csv:3:", "mixed formats"});
  check_error<ValueError>([&] { plot::parse_metrics("b.jsonl", "{\"step\":1}\nstep,loss\n"); },
                          {"b.jsonl:2:", "mixed formats"});
  check_error<ValueError>([&] { plot::parse_metrics("b.jsonl", "{\"step\":1}\n{\"step\":2,\n"); },
                          {"b.jsonl:2:", "not valid JSON"});
  check_error<ValueError>([&] { plot::parse_metrics("b.jsonl", "{\"step\":1,\"loss\":\"low\"}\n"); },
                          {"b.jsonl:1:", "loss", "not a number"});
  std::string bad = csv_row(train_row(10, 1.25));
  bad.replace(bad.find(",1.25,"), 6, ",x,");  // the loss cell
  check_error<ValueError>([&] { plot::parse_metrics("c.csv", h + "\n" + bad + "\n"); },
                          {"c.csv:2:", "column loss", "\"x\" is not a number"});
  check_error<ValueError>([&] { plot::parse_metrics("d.csv", "time,value\n1,2\n"); }, {"d.csv:1:", "no \"step\""});
  check_error<ValueError>([&] { plot::parse_metrics("e.csv", ""); }, {"e.csv", "empty"});
  check_error<IOError>([&] { plot::read_metrics("/nonexistent/run.csv"); }, {"/nonexistent/run.csv", "cannot read"});
}

TEST_CASE("metrics_plot: one series per run and curve, the legend's labels, axis labels and nice ticks") {
  const std::vector<plot::LabelledLog> runs = {{"world 1", single_log()}, {"world 2 & DDP", ddp_log()}};
  std::vector<std::string> notes;
  const plot::PlotSpec loss = plot::metrics_plot("loss", runs, notes);
  CHECK(loss.series.size() == 2);  // no validation loss in these logs: one curve per run
  CHECK(loss.x_label == "optimizer step");
  CHECK(loss.y_label == "loss");
  const std::string svg = plot::render_svg(loss);
  CHECK(count(svg, "<polyline") == 2);
  CHECK(svg.find(">world 1</text>") != std::string::npos);
  CHECK(svg.find(">world 2 &amp; DDP</text>") != std::string::npos);  // escaped
  CHECK(svg.find(">optimizer step</text>") != std::string::npos);
  CHECK(svg.find(">1.6</text>") != std::string::npos);  // 0.2 tick steps over losses 1.5 .. 2.2
  CHECK(loss.y_min == doctest::Approx(1.4));
  CHECK(loss.y_max == doctest::Approx(2.2));
  CHECK(loss.x_min == 0);
  CHECK(loss.x_max == 20);

  const plot::PlotSpec accuracy = plot::metrics_plot("accuracy", runs, notes);
  REQUIRE(accuracy.series.size() == 2);
  CHECK(accuracy.series[1].points.at(0).second == doctest::Approx(70.0));  // percent
  CHECK(accuracy.y_label == "test accuracy (%)");

  // Communication: only the DDP run has values; the other is left out with a note.
  notes.clear();
  const plot::PlotSpec comm = plot::metrics_plot("communication", runs, notes);
  CHECK(comm.series.size() == 2);  // total and exposed of the DDP run
  CHECK(comm.series[0].name == "world 2 & DDP total");
  CHECK(comm.series[1].name == "world 2 & DDP exposed");
  CHECK(comm.series[1].dashed);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("world 1") != std::string::npos);
  CHECK(plot::has_metric("communication", runs));
  CHECK_FALSE(plot::has_metric("mfu", runs));
}

TEST_CASE("metrics_plot: a log without the metric's column, no values at all, an unknown metric") {
  const plot::MetricsFile old = plot::parse_metrics(
      "old.csv",
      "step,epoch,loss,lr,samples_per_second,elapsed_seconds,data_wait_percent,loss_scale,skipped_steps\n"
      "10,1,2.3,0.05,900,1.5,2.0,1,0\n");
  std::vector<std::string> notes;
  check_error<ValueError>([&] { plot::metrics_plot("accuracy", {{"old", old}}, notes); },
                          {"old.csv", "no eval_accuracy column", "--metric accuracy"});
  check_error<ValueError>([&] { plot::metrics_plot("communication", {{"one", single_log()}}, notes); },
                          {"none of the logs", "comm_ms_per_step", "DDP"});
  check_error<ValueError>([&] { plot::metrics_plot("speed", {{"one", single_log()}}, notes); },
                          {"\"speed\"", "loss, accuracy"});
  CHECK(plot::metrics_plot("loss", {{"old", old}}, notes).series.size() == 1);  // old logs still plot their loss
}

TEST_CASE("nice_linear_range ends on 1-2-2.5-5 ticks") {
  CHECK(plot::nice_linear_range(0.12, 2.31) == std::pair<double, double>{0, 2.5});
  CHECK(plot::nice_linear_range(0, 938) == std::pair<double, double>{0, 1000});
  const auto single = plot::nice_linear_range(5, 5);
  CHECK(single.first < 5);
  CHECK(single.second > 5);
}
