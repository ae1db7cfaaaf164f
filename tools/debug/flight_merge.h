// syncgrad-debug flight: reading the flight recorder's dumps (distributed/flight_recorder.h) of every rank of a job
// from one directory and merging them into one view sorted by sequence number, with each rank's state per
// collective and the first place where the ranks diverge.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace syncgrad::debug {

// A directory without dumps, a malformed dump, dumps of different runs, a rank dumped twice: the message names the
// file(s) and says what to do.
class FlightInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FlightRecord {
  uint64_t seq = 0;
  std::string op, dtype, shape, detail, caller, state;
  int64_t bytes = 0;
  int64_t queued_us = 0, started_us = 0, finished_us = 0;
  // What must agree across ranks: op, dtype, shape and argument.
  std::string call() const;
};

struct FlightDump {
  std::string path, run, group, backend, host, reason;
  int rank = 0, size = 0;
  int64_t pid = 0, dumped_us = 0, capacity = 0;
  std::vector<FlightRecord> records;  // by seq
};

// Every syncgrad_flight_*.json of `dir`, grouped by process group name and sorted by rank.
std::map<std::string, std::vector<FlightDump>> read_flight_dumps(const std::string& dir);

// One dump file (FlightInputError when it is not one).
FlightDump read_flight_dump(const std::string& path);

// The merged view of one group's dumps. `all`: every collective; else the 10 before the first divergence and
// everything after it.
std::string merged_flight_view(const std::vector<FlightDump>& dumps, bool all);

// The first divergence as one sentence ("" when the ranks agree everywhere).
std::string first_flight_divergence(const std::vector<FlightDump>& dumps);

}  // namespace syncgrad::debug
