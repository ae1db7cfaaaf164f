// Clock alignment for a job's timeline trace: each rank's offset to rank 0's steady clock, measured through the
// store (no shared clock, no shared file system needed). Rank r sends a request, rank 0 answers with its clock,
// rank r reads it: offset = rank 0's time - the midpoint of rank r's send and receive. Of several round trips
// the one with the smallest round-trip time is kept; the offset is then right to within half of that round
// trip (the answer was taken somewhere between the send and the receive).
#pragma once

#include <cstdint>
#include <string>

#include "distributed/store.h"

namespace syncgrad::distributed {

struct ClockOffset {
  int64_t offset_ns = 0;      // add to this rank's profiler::now_ns() to get rank 0's
  int64_t round_trip_ns = 0;  // of the round trip the offset came from; the error is at most half of it
};

// Every rank of the job calls it (rank 0 answers the others in rank order); rank 0 gets {0, 0}. `rounds` round
// trips per rank (at least 1). Keys live under `prefix` and are removed afterwards. TimeoutError (from the
// store) when a rank does not take part.
ClockOffset measure_clock_offset(Store& store, int rank, int world_size, const std::string& prefix = "trace_clock/",
                                 int rounds = 8);

}  // namespace syncgrad::distributed
