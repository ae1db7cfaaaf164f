// The flight recorder: every process group keeps a ring buffer (default 2,000 entries) of its recent collectives
// -- sequence number, op, dtype, shape, bytes, caller ("DDP bucket 3", see collective_caller.h), state (queued,
// started, done, failed) and wall-clock timestamps -- so that a hung or failed job can say where each rank was.
//
// Cost on the hot path: one uncontended lock and a few fixed-size copies per collective (the ring is allocated
// once). A background thread per group publishes this rank's latest collective to the group's store ("flight/
// state/<rank>") when it changed, at most every 100 ms, and a sign of life every 0.5 s, so a rank that is stopped
// (SIGSTOP) or hung leaves its last position where the others can read it without ever asking it.
//
// On a timeout, a peer error or a desync, the failing rank writes its ring to SYNCGRAD_FLIGHT_DIR (default: the
// working directory) as syncgrad_flight_<group>_rank<r>.json, asks every other rank of the group to write theirs
// (they notice within 0.5 s), reads the ranks' published positions and appends to the error where the ranks
// diverged: "rank 1 is stuck in allreduce #812 (DDP bucket 3, float32 [300000], 1.2 MB), started 31.0 s ago;
// rank 0 waits in allreduce #813 ...". `syncgrad-debug flight DIR` merges the dumps.
//
// Environment: SYNCGRAD_FLIGHT_RECORDER=N entries per group (0 turns it off; default 2000), SYNCGRAD_FLIGHT_DIR.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/store.h"
#include "tensor/tensor.h"

namespace syncgrad::distributed {

enum class FlightState : uint8_t { kQueued, kStarted, kDone, kFailed };
const char* flight_state_name(FlightState state);

// One collective, in fixed-size fields (no allocation when recorded). Times: microseconds since the Unix epoch
// (wall clock, so that ranks on one host compare; 0 = not yet).
struct FlightEntry {
  static constexpr int kMaxDims = 6;
  uint64_t seq = 0;
  char op[24] = {};
  char dtype[12] = {};
  int32_t ndim = -1;  // -1: no tensor (barrier)
  int64_t dims[kMaxDims] = {};
  int64_t numel = 0;
  int64_t bytes = 0;
  char detail[32] = {};  // the op's argument: "sum", "root 0", "to rank 1, tag 0"
  char caller[48] = {};
  FlightState state = FlightState::kQueued;
  int64_t queued_us = 0;
  int64_t started_us = 0;
  int64_t finished_us = 0;
};

// "[32, 32]" (dims beyond kMaxDims: "[a, b, c, d, e, f, ...]"); "" for no tensor.
std::string flight_shape_text(const FlightEntry& entry);
// "allreduce #812 (DDP bucket 3, float32 [300000], 1.2 MB)".
std::string flight_entry_summary(const FlightEntry& entry);
// "1.2 MB", "512 B".
std::string flight_bytes_text(int64_t bytes);
int64_t flight_now_us();

// What a backend knows of a collective when it queues it (`tensor` may be null: barrier).
struct FlightCall {
  const char* op = "";
  const Tensor* tensor = nullptr;
  std::string detail;  // the op's argument: "sum", "root 0" (short: kept inline by std::string)
};

// A collective's description for error messages ("allreduce #12 (sum, float32, 1024 elements)") and what the
// flight recorder and SYNCGRAD_DEBUG=detail keep of it.
struct DescribedCall {
  std::string text;
  FlightCall call;
};

// The recorder's settings from SYNCGRAD_FLIGHT_RECORDER and SYNCGRAD_FLIGHT_DIR (ValueError naming a bad value).
struct FlightSettings {
  static constexpr size_t kDefaultEntries = 2000;
  size_t entries = kDefaultEntries;
  std::string dir;  // "" = the working directory
  static FlightSettings from_env();
};

class FlightRecorder : public std::enable_shared_from_this<FlightRecorder> {
 public:
  // Null when the settings turn the recorder off (0 entries). `store` (the group's) may be null: nothing is then
  // published or read, and a failure explains only this rank. `backend`: "gloo" or "nccl".
  static std::shared_ptr<FlightRecorder> create(const FlightSettings& settings, std::shared_ptr<Store> store,
                                                int rank, int size, std::string backend);
  FlightRecorder(const FlightSettings& settings, std::shared_ptr<Store> store, int rank, int size,
                 std::string backend);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // The group's name in dumps: "world" unless set ("subgroup 0", ...).
  void set_group_name(const std::string& name);
  const std::string& group_name() const { return group_name_; }
  int rank() const { return rank_; }
  size_t capacity() const { return ring_.size(); }

  // The three moments of a collective. Records of a seq that the ring has since overwritten are ignored.
  void record(uint64_t seq, const FlightCall& call);
  void mark_started(uint64_t seq);
  void mark_finished(uint64_t seq, bool failed);
  // The ring's entries, oldest first.
  std::vector<FlightEntry> entries() const;

  // Writes this rank's ring (atomically: a temporary file renamed) and returns its path; a message starting with
  // "could not write" when the directory is not writable (the caller's error is more important than the dump).
  std::string dump(const std::string& reason);
  // On a failure of collective `seq` (or, seq < 0, outside a collective: a desync found by a check): dumps this
  // rank's ring, asks the other ranks to dump theirs, and returns the sentences that say where every rank is and
  // where the dumps are, to be appended to the error message.
  // `waited`: this rank timed out waiting in `seq` ("waits in"), rather than failed in it ("failed in").
  std::string explain_failure(int64_t seq, const std::string& reason, bool waited = false);
  // `error` (a DistributedError; others pass unchanged) as the same type with explain_failure's text appended.
  std::exception_ptr explained(std::exception_ptr error, int64_t seq);

  // Stops the publishing thread (the process group is being destroyed).
  void stop();

 private:
  struct Position;
  void start_publisher();
  void publish_loop();
  std::string position_line() const;
  // The other ranks' published positions, after waiting a little for the live ones to dump on `request`.
  // nullopt when the store failed or did not answer within `limit`.
  std::optional<std::vector<std::pair<int, std::string>>> read_positions(const std::string& request,
                                                                         std::chrono::milliseconds limit) const;
  std::string dump_path() const;
  bool is_fresh_request_of_another_rank(const std::string& request) const;

  int rank_;
  int size_;
  std::string backend_;
  std::string group_name_ = "world";
  std::string dir_;
  std::shared_ptr<Store> store_;
  std::string run_id_;
  int64_t created_us_;

  mutable std::mutex mutex_;
  std::vector<FlightEntry> ring_;
  uint64_t recorded_ = 0;  // entries ever recorded (the ring holds the last ring_.size())
  uint64_t latest_seq_ = 0;
  std::atomic<uint64_t> version_{0};
  std::atomic<bool> failed_{false};  // this rank explained a failure of its own (and dumped for it)

  std::mutex publisher_mutex_;
  std::condition_variable publisher_wake_;
  bool stopping_ = false;
  std::mutex dump_mutex_;
};

// For a desync found outside a collective (a check's result): "\n" + recorder->explain_failure(-1, reason), or
// "" without a recorder.
std::string flight_note(const std::shared_ptr<FlightRecorder>& recorder, const std::string& reason);

}  // namespace syncgrad::distributed
