// SYNCGRAD_DEBUG=detail's check (debug_mode.h): before a collective runs, the ranks exchange its fingerprint --
// op, dtype, shape and argument ("allreduce float32 [1024] sum"), with the caller ("DDP bucket 0") for the
// message -- and any difference is a DesyncError on every rank naming both calls: "rank 0 calls allreduce float32
// [1024] sum (DDP bucket 0), rank 1 calls allreduce float32 [512] sum (DDP bucket 0)". Without it such a mismatch
// hangs, fails with a size error, or (same byte count) silently mixes unrelated data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "distributed/flight_recorder.h"

namespace syncgrad::distributed {

// One rank's fingerprint in a fixed-size record: the compared call, then the caller (cut to fit).
struct CollectiveFingerprint {
  static constexpr size_t kCallBytes = 96;
  static constexpr size_t kCallerBytes = 48;
  static constexpr size_t kBytes = kCallBytes + kCallerBytes;
  char record[kBytes] = {};
};

// The fingerprint of `call` issued by the current CollectiveCaller (collective_caller.h).
CollectiveFingerprint fingerprint_of(const FlightCall& call);

// Exchanges the ranks' fingerprints through `sum_bytes` (an in-place byte-wise sum over ranks of a buffer of
// size * kBytes bytes: each rank fills its own slot, so the sum is everyone's records) and throws DesyncError when
// they differ. `seq`: the collective's number, for the message.
void check_fingerprints(const CollectiveFingerprint& mine, int rank, int size, uint64_t seq,
                        const std::function<void(uint8_t* data, size_t bytes)>& sum_bytes);

}  // namespace syncgrad::distributed
