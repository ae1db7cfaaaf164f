// Gathering every rank's trace events on rank 0 through the store, chunk by chunk (see trace_gather.h).
#include "distributed/trace_gather.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "distributed/errors.h"
#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::distributed {
namespace {

constexpr size_t kChunksAhead = 2;

std::string rank_key(const JobTraceOptions& o, int rank, const std::string& what) {
  return o.prefix + std::to_string(rank) + "/" + what;
}

// Rank r > 0: waits until rank 0 asks, then sends its events and clock round trip, chunk by chunk.
void send_events(const std::string& events, Store& store, int rank, const ClockOffset& clock,
                 const JobTraceOptions& o) {
  store.get(rank_key(o, rank, "go"));
  const size_t chunks = (events.size() + o.chunk_bytes - 1) / o.chunk_bytes;
  store.set(rank_key(o, rank, "header"), std::to_string(chunks) + " " + std::to_string(clock.round_trip_ns));
  for (size_t i = 0; i < chunks; ++i) {
    if (i >= kChunksAhead) {
      const std::string ack = rank_key(o, rank, "ack/" + std::to_string(i - kChunksAhead));
      store.get(ack);
      store.delete_key(ack);
    }
    store.set(rank_key(o, rank, "chunk/" + std::to_string(i)),
              std::string_view(events).substr(i * o.chunk_bytes, o.chunk_bytes));
  }
  for (size_t i = chunks >= kChunksAhead ? chunks - kChunksAhead : 0; i < chunks; ++i) {
    const std::string ack = rank_key(o, rank, "ack/" + std::to_string(i));
    store.get(ack);
    store.delete_key(ack);
  }
}

// Rank 0: rank r's events and clock round trip.
std::string receive_events(Store& store, int rank, const JobTraceOptions& o, int64_t& round_trip_ns) {
  store.set(rank_key(o, rank, "go"), std::string("1"));
  const std::string header = store.get_string(rank_key(o, rank, "header"));
  unsigned long long chunks = 0;
  long long round_trip = 0;
  SYNCGRAD_CHECK(std::sscanf(header.c_str(), "%llu %lld", &chunks, &round_trip) == 2, DistributedError,
                 "trace: rank ", rank, " sent a malformed header \"", header, "\" (another job using key prefix ",
                 o.prefix, "?)");
  round_trip_ns = round_trip;
  std::string events;
  for (unsigned long long i = 0; i < chunks; ++i) {
    const std::string key = rank_key(o, rank, "chunk/" + std::to_string(i));
    events += store.get_string(key);
    store.delete_key(key);
    store.set(rank_key(o, rank, "ack/" + std::to_string(i)), std::string("1"));
  }
  store.delete_key(rank_key(o, rank, "go"));
  store.delete_key(rank_key(o, rank, "header"));
  return events;
}

}  // namespace

JobTraceSummary write_job_trace(const profiler::Trace& trace, Store& store, int rank, int world_size,
                                const ClockOffset& clock, const std::string& path, const JobTraceOptions& o) {
  SYNCGRAD_CHECK(o.chunk_bytes >= 1, ValueError, "write_job_trace: chunk_bytes must be at least 1");
  SYNCGRAD_CHECK(rank >= 0 && rank < world_size, ValueError, "write_job_trace: rank ", rank, " is not in a job of ",
                 world_size);
  const std::string mine = trace.event_list_json(rank, "rank " + std::to_string(rank), clock.offset_ns);
  JobTraceSummary summary;
  summary.ranks = world_size;
  if (rank != 0) {
    send_events(mine, store, rank, clock, o);
    return summary;
  }
  std::vector<std::string> lists{mine};
  std::string round_trips = "0";
  for (int r = 1; r < world_size; ++r) {
    int64_t round_trip = 0;
    lists.push_back(receive_events(store, r, o, round_trip));
    summary.worst_round_trip_ns = std::max(summary.worst_round_trip_ns, round_trip);
    round_trips += ',';
    round_trips += std::to_string(round_trip / 1000.0);
  }
  const std::string document = profiler::trace_document(
      lists, {{"ranks", std::to_string(world_size)},
              {"clock_alignment", "each rank's steady clock moved onto rank 0's by an offset measured through the "
                                  "store; the error is at most half the round trip"},
              {"clock_round_trip_us_per_rank", round_trips}});
  profiler::write_trace_file(path, document);
  summary.bytes = document.size();
  return summary;
}

}  // namespace syncgrad::distributed
