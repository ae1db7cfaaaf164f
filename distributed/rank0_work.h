// Work that one rank does alone (saving a checkpoint, writing a report) while the other ranks wait for it. A
// barrier would bound the work by the collective timeout and kill a job whose save is merely slow; here the
// working rank bumps a heartbeat key in the store every second while it works, and the waiting ranks poll the
// store: they wait as long as the heartbeat goes on, and fail only when it stops for `silence_limit` (the worker
// hung or died) or when the worker reports that the work failed (then they raise its error text).
//
//   dist::run_on_rank0(group, *dist::default_store(), "saving the checkpoint", [&] { save(...); });
//
// Every rank of the group must call it, in the same order relative to each other's calls (like a collective);
// the work itself must not use the group's collectives. The worker returns as soon as its work is done.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "distributed/process_group.h"
#include "distributed/store.h"

namespace syncgrad::distributed {

struct Rank0WorkOptions {
  // How long the heartbeat may stay silent before the waiters give up; 0: the group's collective timeout.
  std::chrono::milliseconds silence_limit{0};
  std::chrono::milliseconds heartbeat_interval{1000};  // at most a fifth of the silence limit
  std::chrono::milliseconds poll_interval{50};  // how often a waiter looks at the store
};

// On rank 0: runs `work` with a heartbeat, tells the others how it ended and rethrows its exception. On the
// other ranks: waits until rank 0 says it is done; PeerError with rank 0's error text when the work failed
// there; TimeoutError when rank 0 shows no sign of life for the silence limit; PeerError when the store stops
// answering (rank 0's process served it and is gone). `what` names the work in messages ("rank 1 waited while
// rank 0 was saving the checkpoint, ..."). The keys live under "rank0_work/" in `store`; the last waiter removes
// those of its call.
void run_on_rank0(ProcessGroup& group, Store& store, const std::string& what, const std::function<void()>& work,
                  const Rank0WorkOptions& options = {});

// The same with the rank and group size given directly and the silence limit set (for stores without a group).
void run_on_rank0(int rank, int world_size, Store& store, const std::string& what, const std::function<void()>& work,
                  const Rank0WorkOptions& options);

}  // namespace syncgrad::distributed
