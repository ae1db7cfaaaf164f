// flight_record_cost: what the flight recorder costs per collective, measured directly in one process (the A/B of
// bench/flight_overhead.sh drowns in a loaded machine's noise): the three recorder calls every collective makes
// (record when queued, started, finished) with a caller label set, and the fingerprint SYNCGRAD_DEBUG=detail
// builds. Prints nanoseconds per collective (median of 9 runs of 200,000).
//   build/bench/flight_record_cost
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "distributed/collective_caller.h"
#include "distributed/collective_fingerprint.h"
#include "distributed/flight_recorder.h"
#include "tensor/ops/factories.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

namespace {

template <class F>
double median_ns_per_call(F&& body) {
  constexpr int kCalls = 200'000;
  std::vector<double> runs;
  for (int run = 0; run < 9; ++run) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) body(static_cast<uint64_t>(run) * kCalls + i);
    runs.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kCalls);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

}  // namespace

int main() {
  FlightSettings settings;
  auto recorder = FlightRecorder::create(settings, nullptr, 0, 1, "gloo");
  const Tensor bucket = zeros({200960});
  const double record_ns = median_ns_per_call([&](uint64_t seq) {
    const CollectiveCaller caller("DDP bucket %d", 1);
    recorder->record(seq, FlightCall{"allreduce", &bucket, "sum"});
    recorder->mark_started(seq);
    recorder->mark_finished(seq, false);
  });
  volatile char sink = 0;
  const double fingerprint_ns = median_ns_per_call([&](uint64_t) {
    const CollectiveCaller caller("DDP bucket %d", 1);
    sink = fingerprint_of(FlightCall{"allreduce", &bucket, "sum"}).record[0];
  });
  std::printf("flight recorder: %.0f ns per collective (record + started + finished, %zu-entry ring, caller label "
              "set); SYNCGRAD_DEBUG=detail's fingerprint: %.0f ns to build (plus its exchange)\n",
              record_ns, recorder->capacity(), fingerprint_ns);
  return sink == 1 ? 1 : 0;
}
