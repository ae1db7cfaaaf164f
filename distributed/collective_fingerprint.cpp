// Building and comparing the fingerprints of SYNCGRAD_DEBUG=detail.
#include "distributed/collective_fingerprint.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "distributed/collective_caller.h"
#include "distributed/errors.h"
#include "tensor/ops/views.h"

namespace syncgrad::distributed {

namespace {

void put(char* to, size_t capacity, std::string_view text) {
  const size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(to, text.data(), n);
  to[n] = '\0';
}

std::string_view field(const char* from, size_t capacity) { return {from, strnlen(from, capacity)}; }

// "allreduce float32 [1024] sum (DDP bucket 0)".
std::string call_text(const uint8_t* record) {
  const char* text = reinterpret_cast<const char*>(record);
  std::string call(field(text, CollectiveFingerprint::kCallBytes));
  const std::string_view caller = field(text + CollectiveFingerprint::kCallBytes, CollectiveFingerprint::kCallerBytes);
  if (!caller.empty()) call += " (" + std::string(caller) + ")";
  return call;
}

}  // namespace

CollectiveFingerprint fingerprint_of(const FlightCall& call) {
  std::string text = call.op;
  if (call.tensor != nullptr) {
    text.append(" ").append(dtype_name(call.tensor->dtype())).append(" ").append(shape_str(call.tensor->sizes()));
  }
  if (!call.detail.empty()) text.append(" ").append(call.detail);
  CollectiveFingerprint fingerprint;
  put(fingerprint.record, CollectiveFingerprint::kCallBytes, text);
  put(fingerprint.record + CollectiveFingerprint::kCallBytes, CollectiveFingerprint::kCallerBytes,
      CollectiveCaller::current());
  return fingerprint;
}

void check_fingerprints(const CollectiveFingerprint& mine, int rank, int size, uint64_t seq,
                        const std::function<void(uint8_t* data, size_t bytes)>& sum_bytes) {
  constexpr size_t n = CollectiveFingerprint::kBytes;
  std::vector<uint8_t> all(n * static_cast<size_t>(size), 0);
  std::memcpy(all.data() + n * static_cast<size_t>(rank), mine.record, n);
  sum_bytes(all.data(), all.size());
  auto call_of = [&](int r) { return all.data() + n * static_cast<size_t>(r); };
  std::string differences;
  int count = 0;
  for (int r = 0; r < size; ++r) {
    if (r == rank || std::memcmp(call_of(r), mine.record, CollectiveFingerprint::kCallBytes) == 0) continue;
    if (++count <= 3) differences += ", rank " + std::to_string(r) + " calls " + call_text(call_of(r));
  }
  if (count == 0) return;
  if (count > 3) differences += " (and " + std::to_string(count - 3) + " more ranks differ)";
  throw DesyncError("SYNCGRAD_DEBUG=detail: collective #" + std::to_string(seq) +
                    " differs across ranks: rank " + std::to_string(rank) + " calls " +
                    call_text(reinterpret_cast<const uint8_t*>(mine.record)) + differences +
                    "; every rank must call the same collectives, with the same dtypes and shapes, in the same order");
}

}  // namespace syncgrad::distributed
