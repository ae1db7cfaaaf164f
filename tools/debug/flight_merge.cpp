// Reading, checking and merging the flight recorder's dumps.
#include "tools/debug/flight_merge.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace syncgrad::debug {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "syncgrad-flight-recorder 1";

std::string shape_of(const json& shape) {
  if (shape.is_null()) return "";
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d].get<int64_t>());
  return text + "]";
}

std::string bytes_text(int64_t bytes) {
  char text[32];
  if (bytes < 1000) {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  } else if (bytes < 1000 * 1000) {
    std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  }
  return text;
}

std::string seconds(int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::max<int64_t>(0, us) / 1e6);
  return text;
}

const FlightRecord* find(const FlightDump& dump, uint64_t seq) {
  auto it = std::lower_bound(dump.records.begin(), dump.records.end(), seq,
                             [](const FlightRecord& r, uint64_t s) { return r.seq < s; });
  return it != dump.records.end() && it->seq == seq ? &*it : nullptr;
}

// This rank's state of collective `seq` as a table cell, relative to its dump time.
std::string cell(const FlightDump& dump, uint64_t seq) {
  const FlightRecord* r = find(dump, seq);
  if (r == nullptr) {
    if (!dump.records.empty() && seq < dump.records.front().seq) return "(overwritten)";
    return "not called";
  }
  if (r->state == "started") return "started " + seconds(dump.dumped_us - r->started_us) + " before";
  if (r->state == "queued") return "queued " + seconds(dump.dumped_us - r->queued_us) + " before";
  if (r->state == "failed") return "failed after " + seconds(r->finished_us - std::max(r->started_us, r->queued_us));
  return r->state;
}

std::string describe(const FlightRecord& r) {
  std::string text = r.op + " #" + std::to_string(r.seq);
  std::string inside;
  auto add = [&](const std::string& part) {
    if (!part.empty()) inside += (inside.empty() ? "" : ", ") + part;
  };
  add(r.caller);
  add(r.detail);
  if (!r.shape.empty()) add(r.dtype + " " + r.shape + ", " + bytes_text(r.bytes));
  return inside.empty() ? text : text + " (" + inside + ")";
}

std::set<uint64_t> all_seqs(const std::vector<FlightDump>& dumps) {
  std::set<uint64_t> seqs;
  for (const FlightDump& d : dumps) {
    for (const FlightRecord& r : d.records) seqs.insert(r.seq);
  }
  return seqs;
}

// The first seq at which the ranks' records differ in call or a rank has not finished it; nullopt if none.
std::optional<uint64_t> divergence_seq(const std::vector<FlightDump>& dumps) {
  // Below the highest first entry some rank's ring was overwritten: nothing to compare there.
  uint64_t oldest_common = 0;
  for (const FlightDump& d : dumps) {
    if (!d.records.empty()) oldest_common = std::max(oldest_common, d.records.front().seq);
  }
  for (uint64_t seq : all_seqs(dumps)) {
    if (seq < oldest_common) continue;
    const FlightRecord* first = nullptr;
    for (const FlightDump& d : dumps) {
      const FlightRecord* r = find(d, seq);
      if (r == nullptr || r->state != "done") return seq;
      if (first == nullptr) first = r;
      if (r->call() != first->call()) return seq;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string FlightRecord::call() const { return op + " " + dtype + " " + shape + " " + detail; }

FlightDump read_flight_dump(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw FlightInputError(path + ": cannot be read");
  const std::string head = path + " is not a syncgrad flight recorder dump";
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw FlightInputError(head + " (malformed JSON: " + e.what() + "); remove it or rewrite it from the run");
  }
  try {
    if (!doc.is_object() || doc.value("format", "") != kFormat) {
      throw FlightInputError(head + " (its \"format\" is not \"" + kFormat + "\")");
    }
    FlightDump dump;
    dump.path = path;
    dump.run = doc.at("run").get<std::string>();
    dump.group = doc.at("group").get<std::string>();
    dump.backend = doc.at("backend").get<std::string>();
    dump.host = doc.at("host").get<std::string>();
    dump.reason = doc.at("reason").get<std::string>();
    dump.rank = doc.at("rank").get<int>();
    dump.size = doc.at("size").get<int>();
    dump.pid = doc.at("pid").get<int64_t>();
    dump.dumped_us = doc.at("dumped_us").get<int64_t>();
    dump.capacity = doc.at("capacity").get<int64_t>();
    if (dump.size < 1 || dump.rank < 0 || dump.rank >= dump.size) {
      throw FlightInputError(head + " (rank " + std::to_string(dump.rank) + " of size " + std::to_string(dump.size) +
                             ")");
    }
    for (const json& e : doc.at("entries")) {
      FlightRecord r;
      r.seq = e.at("seq").get<uint64_t>();
      r.op = e.at("op").get<std::string>();
      r.dtype = e.at("dtype").get<std::string>();
      r.shape = shape_of(e.at("shape"));
      r.detail = e.at("detail").get<std::string>();
      r.caller = e.at("caller").get<std::string>();
      r.state = e.at("state").get<std::string>();
      r.bytes = e.at("bytes").get<int64_t>();
      r.queued_us = e.at("queued_us").get<int64_t>();
      r.started_us = e.at("started_us").get<int64_t>();
      r.finished_us = e.at("finished_us").get<int64_t>();
      dump.records.push_back(std::move(r));
    }
    std::sort(dump.records.begin(), dump.records.end(),
              [](const FlightRecord& a, const FlightRecord& b) { return a.seq < b.seq; });
    return dump;
  } catch (const json::exception& e) {
    throw FlightInputError(head + " (" + e.what() + ")");
  }
}

std::map<std::string, std::vector<FlightDump>> read_flight_dumps(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw FlightInputError(dir + " is not a directory; give the directory the ranks wrote their dumps to "
                                 "(SYNCGRAD_FLIGHT_DIR, default their working directory)");
  }
  static const std::regex name(R"(syncgrad_flight_.*_rank[0-9]+\.json)");
  std::vector<std::string> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && std::regex_match(entry.path().filename().string(), name)) {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) {
    throw FlightInputError("no flight recorder dumps (syncgrad_flight_<group>_rank<r>.json) in " + dir +
                           "; the ranks write them on a collective timeout, a peer error or a desync, to "
                           "SYNCGRAD_FLIGHT_DIR (default: their working directory)");
  }
  std::map<std::string, std::vector<FlightDump>> groups;
  for (const std::string& path : paths) {
    FlightDump dump = read_flight_dump(path);
    std::vector<FlightDump>& same = groups[dump.group];
    for (const FlightDump& other : same) {
      if (other.run != dump.run) {
        throw FlightInputError(path + " and " + other.path + " come from different runs (run ids " + dump.run +
                               " and " + other.run + "); put the dumps of one job in a directory of their own");
      }
      if (other.rank == dump.rank) {
        throw FlightInputError(path + " and " + other.path + " are both rank " + std::to_string(dump.rank) +
                               " of group " + dump.group + "; remove one");
      }
    }
    same.push_back(std::move(dump));
  }
  for (auto& [group, dumps] : groups) {
    std::sort(dumps.begin(), dumps.end(), [](const FlightDump& a, const FlightDump& b) { return a.rank < b.rank; });
  }
  return groups;
}

std::string first_flight_divergence(const std::vector<FlightDump>& dumps) {
  const std::optional<uint64_t> seq = divergence_seq(dumps);
  if (!seq) return "";
  std::string text = "first divergence at #" + std::to_string(*seq) + ": ";
  for (size_t i = 0; i < dumps.size(); ++i) {
    const FlightDump& d = dumps[i];
    text.append(i ? "; " : "").append("rank ").append(std::to_string(d.rank)).append(": ");
    if (const FlightRecord* r = find(d, *seq)) {
      text.append(describe(*r)).append(", ").append(cell(d, *seq));
    } else if (!d.records.empty() && d.records.back().seq < *seq) {
      text.append("never called it (its last: ").append(describe(d.records.back())).append(", ");
      text.append(cell(d, d.records.back().seq)).append(")");
    } else {
      text += "has no record of it";
    }
  }
  return text;
}

std::string merged_flight_view(const std::vector<FlightDump>& dumps, bool all) {
  std::ostringstream out;
  const FlightDump& first = dumps.front();
  out << "group " << first.group << " (" << first.backend << ", " << first.size << " ranks, run " << first.run
      << "): dumps of " << dumps.size() << " of " << first.size << " ranks\n";
  std::set<int> present;
  for (const FlightDump& d : dumps) {
    present.insert(d.rank);
    out << "  rank " << d.rank << ": pid " << d.pid << " on " << d.host << ", " << d.records.size()
        << " collectives recorded, dumped because: " << d.reason << "\n";
  }
  for (int r = 0; r < first.size; ++r) {
    if (!present.count(r)) out << "  rank " << r << ": no dump (it was stopped, killed, or never failed)\n";
  }
  const std::optional<uint64_t> diverged = divergence_seq(dumps);
  const std::set<uint64_t> seqs = all_seqs(dumps);
  uint64_t from = 0;
  if (!all && diverged) from = *diverged > 10 ? *diverged - 10 : 0;
  if (!all && !diverged && !seqs.empty()) from = *seqs.rbegin() > 10 ? *seqs.rbegin() - 10 : 0;
  if (from > 0) out << "  (" << from << " earlier collectives not shown; --all shows them)\n";

  char line[512];
  std::snprintf(line, sizeof line, "%8s  %-22s %-28s %-9s %-14s %9s", "seq", "op", "caller", "dtype", "shape", "bytes");
  out << line;
  for (const FlightDump& d : dumps) {
    std::snprintf(line, sizeof line, "  %-22s", ("rank " + std::to_string(d.rank)).c_str());
    out << line;
  }
  out << "\n";
  for (uint64_t seq : seqs) {
    if (seq < from) continue;
    const FlightRecord* shown = nullptr;
    bool mismatch = false;
    for (const FlightDump& d : dumps) {
      if (const FlightRecord* r = find(d, seq)) {
        if (shown == nullptr) shown = r;
        mismatch = mismatch || r->call() != shown->call();
      }
    }
    const std::string op = shown->detail.empty() ? shown->op : shown->op + " " + shown->detail;
    const std::string bytes = shown->shape.empty() ? "" : bytes_text(shown->bytes);
    std::snprintf(line, sizeof line, "%s%7llu  %-22s %-28s %-9s %-14s %9s", diverged && *diverged == seq ? ">" : " ",
                  static_cast<unsigned long long>(seq), op.c_str(), shown->caller.c_str(), shown->dtype.c_str(),
                  shown->shape.c_str(), bytes.c_str());
    out << line;
    for (const FlightDump& d : dumps) {
      std::snprintf(line, sizeof line, "  %-22s", cell(d, seq).c_str());
      out << line;
    }
    out << "\n";
    if (mismatch) {
      for (const FlightDump& d : dumps) {
        if (const FlightRecord* r = find(d, seq)) {
          out << "          rank " << d.rank << " called " << describe(*r) << "\n";
        }
      }
    }
  }
  const std::string divergence = first_flight_divergence(dumps);
  out << (divergence.empty() ? "the ranks agree on every recorded collective and finished them all" : divergence)
      << "\n";
  return out.str();
}

}  // namespace syncgrad::debug
