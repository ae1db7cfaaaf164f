// Reading launcher and scheduler variables (private to distributed/): a variable's value, and whole decimal
// integers and ports whose malformed values are RendezvousErrors naming the variable, its value and the fix.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace syncgrad::distributed::env_values {

// The variable's value; nullopt when it is not set.
std::optional<std::string> get(const char* name);

// A whole string as a decimal integer in [lo, hi]; nullopt for anything else ("", "+1", "1 ", "0x1").
std::optional<long long> parse_int(std::string_view text, long long lo, long long hi);

// `value` of variable `name` as an integer >= lo (and below 2^30); else a RendezvousError ending with `fix`.
int count(const char* name, const std::string& value, int lo, const std::string& fix);

// The variable read with count(); nullopt when it is not set.
std::optional<int> optional_count(const char* name, int lo, const std::string& fix);

// `value` of variable `name` as a port in 1..65535.
uint16_t port(const char* name, const std::string& value);

// The first of `names` that is set, with its value; nullopt when none is.
std::optional<std::pair<std::string, std::string>> first_set(std::initializer_list<const char*> names);

// Checks rank < world_size, local_world_size <= world_size and local_rank < local_world_size; the
// RendezvousError names the variables (e.g. "SLURM_PROCID=4 is not below SLURM_NTASKS=4").
void check_placement(int rank, int world_size, int local_rank, int local_world_size, const std::string& rank_name,
                     const std::string& world_name, const std::string& local_name,
                     const std::string& local_world_name);

}  // namespace syncgrad::distributed::env_values
