// The job's identity at rendezvous (private to init.cpp). Rank 0, when it serves the store, publishes its job id
// there before anyone else can (the others wait for it); in a store served by the launcher or a file the first
// rank to arrive publishes it. Every other rank compares its own and is turned away when they differ, so that
// a rank of another job on the same MASTER_PORT fails instead of training with this one. Rank 0 serving the
// store also records its pid and host, so that a second RANK=0 can be told who holds it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "distributed/store.h"

namespace syncgrad::distributed::job_identity {

// "job X", or "a job without an id (...)" for the empty id of a job started by hand.
std::string describe_job(const std::string& job_id);

// "pid N on host H": this process.
std::string this_process();

// Rank 0, serving the store, records this_process() there.
void record_store_owner(Store& store);

// What record_store_owner() wrote, waiting for it up to `wait`; "" when nobody did.
std::string store_owner(Store& store, std::chrono::milliseconds wait = std::chrono::milliseconds(0));

// The job id published in the store; nullopt when none is.
std::optional<std::string> published_job(Store& store);

// Publishes `job_id` when the store has none yet, else compares it with the published one; with
// `wait_for_rank0` (rank 0 serves the store and publishes first) a rank other than 0 waits for rank 0's id (up to
// the store's timeout) instead of publishing its own. A rank whose id differs is recorded in the store (see
// turned_away) and gets a RendezvousError naming both ids and `store_address`.
void agree(Store& store, int rank, const std::string& job_id, const std::string& store_address, bool wait_for_rank0);

// The ranks agree() turned away from this store, as a sentence to append to a rendezvous error ("" if none).
std::string turned_away(Store& store);

}  // namespace syncgrad::distributed::job_identity
