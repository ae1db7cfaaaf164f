// The line rank 0 prints once a job of several ranks has met (private to init.cpp), saying what started the job
// and where it met, e.g. "rendezvous: slurm, job 42.0, 4 ranks on 2 nodes, master node01:20042". The node count
// is measured, not assumed: every rank counts its host name in the store before the group is built.
#pragma once

#include <string>

#include "distributed/store.h"

namespace syncgrad::distributed::rendezvous_report {

// Every rank, before the process group is built: one store add, two for the first rank on its host.
void count_host(Store& store);

// Rank 0, once the process group is built (every rank has then counted its host): the whole line, without a
// newline. `source` says what placed the ranks ("slurm", "syncgrad-launch", ...), `master` where they met.
std::string line(Store& store, const std::string& source, const std::string& job_id, int world_size,
                 const std::string& master);

}  // namespace syncgrad::distributed::rendezvous_report
