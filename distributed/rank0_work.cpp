// run_on_rank0: a heartbeat thread on rank 0, store polling on the others (see rank0_work.h).
#include "distributed/rank0_work.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "distributed/errors.h"
#include "distributed/rank_heartbeat.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kFailed = "failed:";

// The keys of one call: every rank counts its own calls, so the n-th call has the same keys everywhere.
struct CallKeys {
  std::string heartbeat;     // bumped by rank 0 while it works
  std::string outcome;       // "done" or "failed:<error text>", set by rank 0 at the end
  std::string acknowledged;  // counts the waiters that saw the outcome; the last one removes the keys
};

CallKeys keys_of_next_call(Store& store, int rank) {
  const int64_t call = store.add("rank0_work/calls/rank" + std::to_string(rank), 1);
  const std::string base = "rank0_work/" + std::to_string(call) + "/";
  return {base + "heartbeat", base + "outcome", base + "acknowledged"};
}

// Adds 1 to `key` now and then every `interval` on its own thread until destroyed. A store error ends the beat
// (the waiters then see the silence).
class Heartbeat {
 public:
  Heartbeat(Store& store, std::string key, std::chrono::milliseconds interval)
      : store_(store), key_(std::move(key)), interval_(interval) {
    store_.add(key_, 1);
    thread_ = std::thread([this] { beat(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  void beat() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
      lock.unlock();
      try {
        store_.add(key_, 1);
      } catch (const std::exception&) {
        return;
      }
      heartbeat::note_progress();
      lock.lock();
    }
  }

  Store& store_;
  std::string key_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

void work_and_report(Store& store, const CallKeys& keys, const std::function<void()>& work,
                     const Rank0WorkOptions& options) {
  std::string outcome = "done";
  std::exception_ptr failure;
  {
    Heartbeat heartbeat(store, keys.heartbeat, options.heartbeat_interval);
    try {
      work();
    } catch (const std::exception& e) {
      failure = std::current_exception();
      outcome = kFailed + std::string(e.what());
    } catch (...) {
      failure = std::current_exception();
      outcome = kFailed + std::string("an exception that is not a std::exception");
    }
  }
  try {
    store.set(keys.outcome, outcome);
  } catch (const std::exception&) {
    if (!failure) throw;  // the work's own error says more than the store's
  }
  if (failure) std::rethrow_exception(failure);
}

std::string seconds_text(std::chrono::milliseconds t) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(t.count()) / 1000.0);
  return text;
}

// What a waiter raises when the store fails under it: rank 0 serves the store, so it has most likely died.
PeerError store_stopped_answering(const std::string& me, const std::string& what, const std::exception& e) {
  return PeerError(me + " waited while rank 0 was " + what + ", but the store stopped answering (" + e.what() +
                   "); rank 0's process has probably died: see its output");
}

// Polls until rank 0's outcome is set; returns it.
std::string wait_for_outcome(Store& store, const CallKeys& keys, int rank, const std::string& what,
                             const Rank0WorkOptions& options) {
  const std::string me = "rank " + std::to_string(rank);
  int64_t last_beat = -1;
  Clock::time_point last_sign = Clock::now();
  while (true) {
    try {
      if (store.check({keys.outcome})) return store.get_string(keys.outcome);
      const int64_t beat = store.add(keys.heartbeat, 0);
      if (beat != last_beat) {
        last_beat = beat;
        last_sign = Clock::now();
        heartbeat::note_progress();
      }
    } catch (const DistributedError& e) {
      throw store_stopped_answering(me, what, e);
    }
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_sign);
    if (silent > options.silence_limit) {
      throw TimeoutError(me + " waited while rank 0 was " + what + ", but rank 0 has shown no sign of life for " +
                         seconds_text(silent) + " (its heartbeat in the store stopped" +
                         (last_beat <= 0 ? ", or never started: did rank 0 reach this point?" : "") +
                         "): it hung or died; the limit is the group's collective timeout");
    }
    std::this_thread::sleep_for(options.poll_interval);
  }
}

}  // namespace

void run_on_rank0(int rank, int world_size, Store& store, const std::string& what, const std::function<void()>& work,
                  const Rank0WorkOptions& options) {
  SYNCGRAD_CHECK(options.silence_limit.count() > 0 && options.poll_interval.count() > 0, ValueError,
                 "run_on_rank0: silence_limit and poll_interval must be positive (got ", options.silence_limit.count(),
                 " ms and ", options.poll_interval.count(), " ms)");
  if (world_size <= 1) return work();
  if (rank == 0) {
    // Several beats within the waiters' silence limit, so a slow poll never mistakes a beating rank 0 for a dead one.
    Rank0WorkOptions beating = options;
    beating.heartbeat_interval = std::min(options.heartbeat_interval, options.silence_limit / 5);
    return work_and_report(store, keys_of_next_call(store, rank), work, beating);
  }
  CallKeys keys;
  try {
    keys = keys_of_next_call(store, rank);
  } catch (const DistributedError& e) {
    throw store_stopped_answering("rank " + std::to_string(rank), what, e);
  }
  const std::string outcome = wait_for_outcome(store, keys, rank, what, options);
  // Tidying up is best effort: rank 0 may already have gone on and ended (its store with it) once it reported.
  try {
    if (store.add(keys.acknowledged, 1) == world_size - 1) {
      for (const std::string& key : {keys.heartbeat, keys.outcome, keys.acknowledged}) store.delete_key(key);
    }
  } catch (const DistributedError&) {
  }
  if (outcome.rfind(kFailed, 0) == 0) {
    throw PeerError("rank " + std::to_string(rank) + " waited while rank 0 was " + what + ", which failed there: " +
                    outcome.substr(std::string(kFailed).size()));
  }
}

void run_on_rank0(ProcessGroup& group, Store& store, const std::string& what, const std::function<void()>& work,
                  const Rank0WorkOptions& options) {
  Rank0WorkOptions with_limit = options;
  if (with_limit.silence_limit.count() == 0) with_limit.silence_limit = group.timeout();
  run_on_rank0(group.rank(), group.size(), store, what, work, with_limit);
}

}  // namespace syncgrad::distributed
