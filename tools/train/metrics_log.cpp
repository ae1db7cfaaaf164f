// MetricsLog: CSV or JSONL rows (see metrics_log.h).
#include "tools/train/metrics_log.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::train {
namespace {

std::string header_line() {
  std::string header;
  for (const std::string& column : kMetricsColumns) header += (header.empty() ? "" : ",") + column;
  return header;
}

std::string number(std::optional<double> value) {
  if (!value) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", *value);
  return text;
}

std::string integer(std::optional<int64_t> value) { return value ? std::to_string(*value) : ""; }

// A JSON value for a cell of column `column`: the kind quoted, an absent or non-finite number null.
std::string json_value(const std::string& column, const std::string& cell) {
  if (column == "kind") return "\"" + cell + "\"";
  if (cell.empty() || cell.find_first_of("ni") != std::string::npos) return "null";  // "", nan, inf
  return cell;
}

}  // namespace

std::vector<std::string> metrics_cells(const MetricsRow& r) {
  return {std::to_string(r.step),       std::to_string(r.epoch),          number(r.loss),
          number(r.lr),                 number(r.samples_per_second),     number(r.elapsed_seconds),
          number(r.data_wait_percent),  number(r.loss_scale),             integer(r.skipped_steps),
          r.kind,                       number(r.tokens_per_second),      number(r.mfu_percent),
          number(r.comm_ms_per_step),   number(r.exposed_comm_ms_per_step), number(r.exposed_comm_percent),
          number(r.peak_memory_mib),    number(r.peak_rss_mib),           number(r.eval_loss),
          number(r.eval_accuracy)};
}

MetricsLog::MetricsLog(const std::string& path) {
  jsonl_ = path.size() >= 6 && path.substr(path.size() - 6) == ".jsonl";
  std::error_code error;
  const bool fresh = !std::filesystem::exists(path, error) || std::filesystem::file_size(path, error) == 0;
  if (!jsonl_ && !fresh) {
    std::ifstream existing(path);
    std::string header;
    std::getline(existing, header);
    SYNCGRAD_CHECK(header == header_line(), IOError, "--log-file: \"", path,
                   "\" already holds a log with other columns (its header is \"", header.substr(0, 120),
                   "\"); appending would mix two layouts: give a new file");
  }
  out_.open(path, std::ios::app);
  SYNCGRAD_CHECK(out_, IOError, "--log-file: cannot open \"", path, "\" for appending: ", std::strerror(errno),
                 "; check that the directory exists and is writable");
  if (!jsonl_ && fresh) out_ << header_line() << '\n';
}

void MetricsLog::write(const MetricsRow& row) {
  const std::vector<std::string> cells = metrics_cells(row);
  std::string line;
  if (jsonl_) {
    for (size_t i = 0; i < cells.size(); ++i) {
      line += (i == 0 ? "{\"" : ",\"") + kMetricsColumns[i] + "\":" + json_value(kMetricsColumns[i], cells[i]);
    }
    line += "}\n";
  } else {
    for (size_t i = 0; i < cells.size(); ++i) line += (i == 0 ? "" : ",") + cells[i];
    line += '\n';
  }
  out_ << line;
  out_.flush();
}

}  // namespace syncgrad::train
