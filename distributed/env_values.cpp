// Reading launcher and scheduler variables (see env_values.h).
#include "distributed/env_values.h"

#include <charconv>
#include <cstdlib>

#include "distributed/errors.h"
#include "tensor/check.h"

namespace syncgrad::distributed::env_values {

std::optional<std::string> get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<long long> parse_int(std::string_view text, long long lo, long long hi) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < lo || value > hi) return std::nullopt;
  return value;
}

int count(const char* name, const std::string& value, int lo, const std::string& fix) {
  std::optional<long long> n = parse_int(value, lo, 1 << 30);
  SYNCGRAD_CHECK(n, RendezvousError, name, "='", value, "' is not an integer >= ", lo, "; ", fix);
  return static_cast<int>(*n);
}

std::optional<int> optional_count(const char* name, int lo, const std::string& fix) {
  std::optional<std::string> value = get(name);
  if (!value) return std::nullopt;
  return count(name, *value, lo, fix);
}

uint16_t port(const char* name, const std::string& value) {
  std::optional<long long> port = parse_int(value, 1, 65535);
  SYNCGRAD_CHECK(port, RendezvousError, name, "='", value,
                 "' is not a port number in 1..65535; set it to the port the job's store is served on, e.g. ", name,
                 "=29500 (syncgrad-launch sets it for you)");
  return static_cast<uint16_t>(*port);
}

std::optional<std::pair<std::string, std::string>> first_set(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::optional<std::string> value = get(name)) return std::make_pair(std::string(name), *value);
  }
  return std::nullopt;
}

void check_placement(int rank, int world_size, int local_rank, int local_world_size, const std::string& rank_name,
                     const std::string& world_name, const std::string& local_name,
                     const std::string& local_world_name) {
  SYNCGRAD_CHECK(rank < world_size, RendezvousError, rank_name, "=", rank, " is not below ", world_name, "=",
                 world_size, ": ranks run from 0 to ", world_name,
                 "-1; check the launcher's process counts or the values you exported");
  SYNCGRAD_CHECK(local_world_size <= world_size, RendezvousError, local_world_name, "=", local_world_size,
                 " is larger than ", world_name, "=", world_size, "; a node cannot hold more processes than the job");
  SYNCGRAD_CHECK(local_rank < local_world_size, RendezvousError, local_name, "=", local_rank, " is not below ",
                 local_world_name, "=", local_world_size,
                 ": local ranks run from 0 to the number of processes on this node - 1; set ", local_world_name,
                 " to that number");
}

}  // namespace syncgrad::distributed::env_values
