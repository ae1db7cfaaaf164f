// One trace file for a whole job: every rank's events (profiler/trace.h), moved onto rank 0's clock
// (trace_clock.h), reach rank 0 through the store -- so it works across nodes without a shared file system --
// and rank 0 writes them as one trace-event document, pid = rank. Each rank sends its events in chunks of at
// most `chunk_bytes`, at most two chunks ahead of what rank 0 has read, and only once rank 0 asks for that
// rank's events, so the store never holds more than two chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "distributed/store.h"
#include "distributed/trace_clock.h"
#include "profiler/trace.h"

namespace syncgrad::distributed {

struct JobTraceOptions {
  std::string prefix = "trace_events/";  // the store keys' prefix (removed afterwards)
  size_t chunk_bytes = 4u << 20;         // at least 1
};

struct JobTraceSummary {
  size_t bytes = 0;  // rank 0: of the file written
  int ranks = 0;
  int64_t worst_round_trip_ns = 0;  // rank 0: the largest clock round trip among the ranks (the alignment error
                                    // is at most half of it)
};

// Every rank calls it after recording; rank 0 writes `path` (IOError naming it) and returns the summary, the
// others return once rank 0 has read their events. TimeoutError (from the store) when a rank does not take
// part.
JobTraceSummary write_job_trace(const profiler::Trace& trace, Store& store, int rank, int world_size,
                                const ClockOffset& clock, const std::string& path, const JobTraceOptions& options = {});

}  // namespace syncgrad::distributed
