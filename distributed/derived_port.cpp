// Ports derived from a job's id (see scheduler_env.h): the same on every rank of the job, different for jobs
// that may share a node, so that two jobs' stores on one node do not clash.
#include <charconv>

#include "distributed/scheduler_env.h"

namespace syncgrad::distributed {

uint16_t derived_port(uint64_t job, uint64_t step) {
  const uint64_t slot = (job % kDerivedPortCount + 97 * (step % kDerivedPortCount)) % kDerivedPortCount;
  return static_cast<uint16_t>(kDerivedPortBase + slot);
}

uint16_t derived_port(std::string_view job_id) {
  uint64_t number = 0;
  const char* end = job_id.data() + job_id.size();
  auto [ptr, ec] = std::from_chars(job_id.data(), end, number);
  if (!job_id.empty() && ec == std::errc() && ptr == end) return derived_port(number, 0);
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a
  for (char c : job_id) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return derived_port(hash, 0);
}

}  // namespace syncgrad::distributed
