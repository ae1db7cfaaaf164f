// CSV and JSONL metrics logs, parsed line by line (see metrics_file.h).
#include "tools/plot/metrics_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::plot {
namespace {

std::string where(const std::string& path, int line) { return path + ":" + std::to_string(line) + ": "; }

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::stringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

// A whole cell as a number (strtod's "nan" and "inf" included); none for anything else.
std::optional<double> to_number(const std::string& cell) {
  if (cell.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size() || errno == ERANGE) return std::nullopt;
  return value;
}

std::string shown(const std::string& text) { return text.size() > 60 ? text.substr(0, 60) + "..." : text; }

void parse_csv(MetricsFile& file, const std::vector<std::string>& lines) {
  file.columns = split_csv(lines[0]);
  SYNCGRAD_CHECK(std::find(file.columns.begin(), file.columns.end(), "step") != file.columns.end(), ValueError,
                 where(file.path, 1), "the CSV header \"", shown(lines[0]),
                 "\" has no \"step\" column; is this a syncgrad-train --log-file?");
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const int number = static_cast<int>(i + 1);
    if (line.empty()) continue;
    SYNCGRAD_CHECK(line[0] != '{', ValueError, where(file.path, number),
                   "a JSON line in a CSV log (mixed formats: was a .jsonl log appended to it?)");
    const std::vector<std::string> cells = split_csv(line);
    SYNCGRAD_CHECK(cells.size() == file.columns.size(), ValueError, where(file.path, number), cells.size(),
                   " cells, but the header has ", file.columns.size(), " columns: \"", shown(line), "\"");
    MetricsRecord record;
    record.line = number;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (file.columns[c] == "kind") {
        if (!cells[c].empty()) record.kind = cells[c];
        continue;
      }
      if (cells[c].empty()) continue;
      const std::optional<double> value = to_number(cells[c]);
      SYNCGRAD_CHECK(value.has_value(), ValueError, where(file.path, number), "column ", file.columns[c], ": \"",
                     shown(cells[c]), "\" is not a number");
      record.values[file.columns[c]] = *value;
    }
    SYNCGRAD_CHECK(record.values.count("step") == 1, ValueError, where(file.path, number), "the row has no step");
    file.records.push_back(std::move(record));
  }
}

void parse_jsonl(MetricsFile& file, const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const int number = static_cast<int>(i + 1);
    if (line.empty()) continue;
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw ValueError(where(file.path, number) + (line[0] == '{' ? "not valid JSON: " + std::string(e.what())
                                                                  : "not a JSON object (mixed formats: a CSV line "
                                                                    "in a JSONL log?): \"" + shown(line) + "\""));
    }
    SYNCGRAD_CHECK(object.is_object(), ValueError, where(file.path, number), "not a JSON object: \"", shown(line),
                   "\"");
    MetricsRecord record;
    record.line = number;
    for (const auto& [key, value] : object.items()) {
      if (std::find(file.columns.begin(), file.columns.end(), key) == file.columns.end()) file.columns.push_back(key);
      if (key == "kind") {
        SYNCGRAD_CHECK(value.is_string(), ValueError, where(file.path, number), "\"kind\" must be a string");
        record.kind = value.get<std::string>();
      } else if (value.is_number()) {
        record.values[key] = value.get<double>();
      } else {
        SYNCGRAD_CHECK(value.is_null(), ValueError, where(file.path, number), "\"", key, "\": ", shown(value.dump()),
                       " is not a number");
      }
    }
    SYNCGRAD_CHECK(record.values.count("step") == 1, ValueError, where(file.path, number), "the object has no step");
    file.records.push_back(std::move(record));
  }
}

}  // namespace

std::optional<double> MetricsRecord::get(const std::string& column) const {
  const auto it = values.find(column);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

bool MetricsFile::has_column(const std::string& column) const {
  return std::find(columns.begin(), columns.end(), column) != columns.end();
}

MetricsFile parse_metrics(const std::string& path, const std::string& text) {
  MetricsFile file;
  file.path = path;
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  const auto first = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return !l.empty(); });
  SYNCGRAD_CHECK(first != lines.end(), ValueError, path, ": the log is empty (did the run reach its first --log-every "
                 "step?)");
  SYNCGRAD_CHECK(first == lines.begin(), ValueError, where(path, 1), "the log starts with an empty line");
  file.jsonl = lines[0][0] == '{';
  if (file.jsonl) {
    parse_jsonl(file, lines);
  } else {
    parse_csv(file, lines);
  }
  SYNCGRAD_CHECK(!file.records.empty(), ValueError, path, ": the log has a header but no rows");
  return file;
}

MetricsFile read_metrics(const std::string& path) {
  std::error_code error;
  SYNCGRAD_CHECK(!std::filesystem::is_directory(path, error), IOError, path, ": a directory, not a metrics log");
  std::ifstream in(path);
  SYNCGRAD_CHECK(in, IOError, path, ": cannot read the log: ", std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse_metrics(path, text.str());
}

}  // namespace syncgrad::plot
