// Reading syncgrad-train's metrics logs (--log-file, tools/train/metrics_log.h) back: a CSV file with a header
// or a JSONL file of one object per line, told apart by their first line. Logs of older syncgrads (without
// the "kind" column and the later ones) read as "train" rows. Every defect is a ValueError naming the file and
// line: a line of the other format (a log of mixed formats), a CSV row with the wrong number of cells, a cell
// or value that is not a number, a line that is not a JSON object; a missing or unreadable file is an IOError.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace syncgrad::plot {

struct MetricsRecord {
  int line = 0;                          // 1-based, in the file
  std::string kind = "train";            // "train" or "eval"
  std::map<std::string, double> values;  // the numeric cells that are present (empty cells and nulls are not)
  std::optional<double> get(const std::string& column) const;
};

struct MetricsFile {
  std::string path;
  bool jsonl = false;
  std::vector<std::string> columns;  // the CSV header, or every key any JSONL line has, in first-seen order
  std::vector<MetricsRecord> records;
  bool has_column(const std::string& column) const;
};

// Parses `text` as the contents of `path` (for the messages).
MetricsFile parse_metrics(const std::string& path, const std::string& text);
// Reads and parses the file at `path`.
MetricsFile read_metrics(const std::string& path);

}  // namespace syncgrad::plot
