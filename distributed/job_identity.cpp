// Publishing and checking the job's identity in the store (see job_identity.h). The keys live outside every
// process group's namespace: they describe the store itself. Values carry a prefix so that the empty id of
// a job started by hand is not mistaken for an absent key.
#include "distributed/job_identity.h"

#include <unistd.h>

#include <climits>
#include <string>

#include "distributed/errors.h"

namespace syncgrad::distributed::job_identity {
namespace {

const std::string kJobKey = "syncgrad/job_id";
const std::string kOwnerKey = "syncgrad/store_owner";
const std::string kTurnedAwayCount = "syncgrad/turned_away/count";
const std::string kTurnedAwayPrefix = "syncgrad/turned_away/";
const std::string kValuePrefix = "id:";

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::string optional_text(Store& store, const std::string& key) {
  return store.check({key}) ? store.get_string(key) : std::string();
}

}  // namespace

std::string describe_job(const std::string& job_id) {
  if (job_id.empty()) return "a job without an id (neither SYNCGRAD_JOB_ID nor SLURM_JOB_ID set)";
  return "job " + job_id;
}

std::string this_process() { return "pid " + std::to_string(getpid()) + " on host " + host_name(); }

void record_store_owner(Store& store) { store.set(kOwnerKey, this_process()); }

std::string store_owner(Store& store, std::chrono::milliseconds wait) {
  if (wait.count() > 0) {
    try {
      store.wait({kOwnerKey}, wait);
    } catch (const TimeoutError&) {
      return "";
    }
  }
  return optional_text(store, kOwnerKey);
}

std::optional<std::string> published_job(Store& store) {
  if (!store.check({kJobKey})) return std::nullopt;
  std::string value = store.get_string(kJobKey);
  if (value.rfind(kValuePrefix, 0) != 0) return value;
  return value.substr(kValuePrefix.size());
}

void agree(Store& store, int rank, const std::string& job_id, const std::string& store_address,
           bool wait_for_rank0) {
  const std::string mine = kValuePrefix + job_id;
  std::string agreed;
  if (wait_for_rank0 && rank != 0) {
    try {
      agreed = store.get_string(kJobKey);
    } catch (const TimeoutError&) {
      throw RendezvousError("rank " + std::to_string(rank) + ": the store at " + store_address +
                            " got no job id from its rank 0 within " + std::to_string(store.timeout().count()) +
                            " ms; is the process serving it a syncgrad rank 0 of this version (check MASTER_PORT)?");
    }
  } else {
    agreed = to_string(store.compare_set(kJobKey, {}, to_bytes(mine)));
  }
  if (agreed == mine) return;
  const std::string theirs = agreed.rfind(kValuePrefix, 0) == 0 ? agreed.substr(kValuePrefix.size()) : agreed;
  const int64_t n = store.add(kTurnedAwayCount, 1);
  store.set(kTurnedAwayPrefix + std::to_string(n),
            "rank " + std::to_string(rank) + " of " + describe_job(job_id) + " (" + this_process() + ")");
  const std::string owner = store_owner(store);
  throw RendezvousError("rank " + std::to_string(rank) + ": this rank belongs to " + describe_job(job_id) +
                        ", the store at " + store_address + " serves " + describe_job(theirs) +
                        (owner.empty() ? "" : " (its rank 0 is " + owner + ")") +
                        ": two jobs share MASTER_PORT? Give each job its own MASTER_PORT (syncgrad-launch picks a "
                        "free one), and start every rank of a job with the same SYNCGRAD_JOB_ID");
}

std::string turned_away(Store& store) {
  if (!store.check({kTurnedAwayCount})) return "";
  const int64_t n = store.add(kTurnedAwayCount, 0);
  std::string ranks;
  for (int64_t i = 1; i <= n; ++i) {
    const std::string entry = optional_text(store, kTurnedAwayPrefix + std::to_string(i));
    if (!entry.empty()) ranks += (ranks.empty() ? "" : "; ") + entry;
  }
  if (ranks.empty()) return "";
  const std::optional<std::string> job = published_job(store);
  return "; the store turned away ranks of another job: " + ranks + " (this job is " +
         describe_job(job.value_or("")) + "; two jobs share MASTER_PORT?)";
}

}  // namespace syncgrad::distributed::job_identity
