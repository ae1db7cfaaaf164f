// Measuring each rank's clock offset to rank 0 through the store (see trace_clock.h).
#include "distributed/trace_clock.h"

#include <limits>

#include "profiler/events.h"
#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::distributed {
namespace {

std::string key(const std::string& prefix, int rank, int round, const char* what) {
  return prefix + std::to_string(rank) + "/" + std::to_string(round) + "/" + what;
}

}  // namespace

ClockOffset measure_clock_offset(Store& store, int rank, int world_size, const std::string& prefix, int rounds) {
  SYNCGRAD_CHECK(rounds >= 1, ValueError, "measure_clock_offset: rounds must be at least 1, got ", rounds);
  SYNCGRAD_CHECK(rank >= 0 && rank < world_size, ValueError, "measure_clock_offset: rank ", rank,
                 " is not in a job of ", world_size);
  if (rank == 0) {
    for (int r = 1; r < world_size; ++r) {
      for (int i = 0; i < rounds; ++i) {
        store.get(key(prefix, r, i, "ask"));
        store.set(key(prefix, r, i, "time"), std::to_string(profiler::now_ns()));
        store.delete_key(key(prefix, r, i, "ask"));
      }
    }
    return {};
  }
  ClockOffset best{0, std::numeric_limits<int64_t>::max()};
  for (int i = 0; i < rounds; ++i) {
    const int64_t sent = profiler::now_ns();
    store.set(key(prefix, rank, i, "ask"), std::string("?"));
    const int64_t theirs = std::stoll(store.get_string(key(prefix, rank, i, "time")));
    const int64_t received = profiler::now_ns();
    store.delete_key(key(prefix, rank, i, "time"));
    const int64_t round_trip = received - sent;
    if (round_trip < best.round_trip_ns) best = {theirs - (sent + round_trip / 2), round_trip};
  }
  return best;
}

}  // namespace syncgrad::distributed
