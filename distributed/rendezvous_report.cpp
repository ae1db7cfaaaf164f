// Counting the job's hosts in the store and wording rank 0's rendezvous line (see rendezvous_report.h).
#include "distributed/rendezvous_report.h"

#include <unistd.h>

#include <climits>

namespace syncgrad::distributed::rendezvous_report {
namespace {

const std::string kHostPrefix = "rendezvous/host/";
const std::string kHostCount = "rendezvous/hosts";

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::string plural(int64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

void count_host(Store& store) {
  if (store.add(kHostPrefix + host_name(), 1) == 1) store.add(kHostCount, 1);
}

std::string line(Store& store, const std::string& source, const std::string& job_id, int world_size,
                 const std::string& master) {
  const int64_t hosts = store.add(kHostCount, 0);
  return "rendezvous: " + source + ", " + (job_id.empty() ? std::string("no job id") : "job " + job_id) + ", " +
         plural(world_size, "rank") + " on " + plural(hosts, "node") + ", master " + master;
}

}  // namespace syncgrad::distributed::rendezvous_report
