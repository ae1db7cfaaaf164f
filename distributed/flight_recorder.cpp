// The flight recorder's ring, its publishing thread, the dumps and the "where is every rank" explanation.
#include "distributed/flight_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "distributed/collective_caller.h"
#include "distributed/env_values.h"
#include "distributed/errors.h"
#include "distributed/file_store.h"
#include "distributed/hash_store.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

constexpr auto kPublishEvery = std::chrono::milliseconds(100);
constexpr int64_t kAliveEveryUs = 500'000;
constexpr int64_t kSilentAfterUs = 3'000'000;  // a rank's sign of life older than this: it is stopped or hung
constexpr auto kReadLimit = std::chrono::milliseconds(5000);
const char* const kStateKey = "flight/state/";
const char* const kDumpRequestKey = "flight/dump_request";
const char* const kRunKey = "flight/run";
const char* const kDumpedKey = "flight/dumped/";
constexpr auto kAckWait = std::chrono::milliseconds(1500);

template <size_t N>
void copy_text(char (&to)[N], std::string_view from) {
  const size_t n = std::min(from.size(), N - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

std::string seconds_ago(int64_t then_us, int64_t now_us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::max<int64_t>(0, now_us - then_us) / 1e6);
  return text;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::optional<int64_t> to_int(const std::string& text) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != text.size()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string random_run_id() {
  std::random_device device;
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", device(), device());
  return text;
}

}  // namespace

const char* flight_state_name(FlightState state) {
  switch (state) {
    case FlightState::kQueued: return "queued";
    case FlightState::kStarted: return "started";
    case FlightState::kDone: return "done";
    case FlightState::kFailed: return "failed";
  }
  return "?";
}

int64_t flight_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string flight_shape_text(const FlightEntry& entry) {
  if (entry.ndim < 0) return "";
  std::string text = "[";
  for (int d = 0; d < std::min(entry.ndim, FlightEntry::kMaxDims); ++d) {
    text += (d ? ", " : "") + std::to_string(entry.dims[d]);
  }
  if (entry.ndim > FlightEntry::kMaxDims) text += ", ...";
  return text + "]";
}

std::string flight_bytes_text(int64_t bytes) {
  char text[32];
  if (bytes < 1000) {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  } else if (bytes < 1000 * 1000) {
    std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  } else if (bytes < 1000LL * 1000 * 1000) {
    std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.2f GB", bytes / 1e9);
  }
  return text;
}

std::string flight_entry_summary(const FlightEntry& entry) {
  std::string inside;
  auto add = [&](const std::string& part) {
    if (!part.empty()) inside += (inside.empty() ? "" : ", ") + part;
  };
  add(entry.caller);
  add(entry.detail);
  if (entry.ndim >= 0) {
    add(std::string(entry.dtype) + " " + flight_shape_text(entry) + ", " + flight_bytes_text(entry.bytes));
  }
  return std::string(entry.op) + " #" + std::to_string(entry.seq) + (inside.empty() ? "" : " (" + inside + ")");
}

FlightSettings FlightSettings::from_env() {
  FlightSettings settings;
  if (std::optional<std::string> entries = env_values::get("SYNCGRAD_FLIGHT_RECORDER")) {
    const std::optional<long long> n = env_values::parse_int(*entries, 0, 10'000'000);
    SYNCGRAD_CHECK(n.has_value(), ValueError, "SYNCGRAD_FLIGHT_RECORDER=\"", *entries,
                   "\" is not a number of entries in 0..10000000; give the flight recorder's ring size per process "
                   "group (default ", kDefaultEntries, "), or 0 to turn it off");
    settings.entries = static_cast<size_t>(*n);
  }
  if (std::optional<std::string> dir = env_values::get("SYNCGRAD_FLIGHT_DIR")) settings.dir = *dir;
  return settings;
}

std::shared_ptr<FlightRecorder> FlightRecorder::create(const FlightSettings& settings, std::shared_ptr<Store> store,
                                                       int rank, int size, std::string backend) {
  if (settings.entries == 0) return nullptr;
  auto recorder = std::make_shared<FlightRecorder>(settings, std::move(store), rank, size, std::move(backend));
  recorder->start_publisher();
  return recorder;
}

FlightRecorder::FlightRecorder(const FlightSettings& settings, std::shared_ptr<Store> store, int rank, int size,
                               std::string backend)
    : rank_(rank), size_(size), backend_(std::move(backend)), dir_(settings.dir), store_(std::move(store)),
      created_us_(flight_now_us()), ring_(settings.entries) {
  // The ranks of one group agree on a run id (the first to arrive sets it), so that dumps of different runs
  // are never merged.
  if (store_) run_id_ = to_string(store_->compare_set(kRunKey, {}, to_bytes(random_run_id())));
}

FlightRecorder::~FlightRecorder() = default;

void FlightRecorder::set_group_name(const std::string& name) {
  std::lock_guard dumping(dump_mutex_);
  group_name_ = name;
}

void FlightRecorder::record(uint64_t seq, const FlightCall& call) {
  const int64_t now = flight_now_us();
  std::lock_guard lock(mutex_);
  FlightEntry& entry = ring_[seq % ring_.size()];
  entry.seq = seq;
  copy_text(entry.op, call.op);
  copy_text(entry.detail, call.detail);
  copy_text(entry.caller, CollectiveCaller::current());
  if (call.tensor != nullptr) {
    const Tensor& t = *call.tensor;
    copy_text(entry.dtype, dtype_name(t.dtype()));
    entry.ndim = static_cast<int32_t>(t.dim());
    for (int d = 0; d < std::min(entry.ndim, FlightEntry::kMaxDims); ++d) entry.dims[d] = t.sizes()[d];
    entry.numel = t.numel();
    entry.bytes = static_cast<int64_t>(t.nbytes());
  } else {
    entry.dtype[0] = '\0';
    entry.ndim = -1;
    entry.numel = 0;
    entry.bytes = 0;
  }
  entry.state = FlightState::kQueued;
  entry.queued_us = now;
  entry.started_us = 0;
  entry.finished_us = 0;
  ++recorded_;
  latest_seq_ = std::max(latest_seq_, seq);
  version_.fetch_add(1, std::memory_order_relaxed);
}

void FlightRecorder::mark_started(uint64_t seq) {
  const int64_t now = flight_now_us();
  std::lock_guard lock(mutex_);
  FlightEntry& entry = ring_[seq % ring_.size()];
  if (entry.seq != seq || entry.queued_us == 0) return;
  entry.state = FlightState::kStarted;
  entry.started_us = now;
  version_.fetch_add(1, std::memory_order_relaxed);
}

void FlightRecorder::mark_finished(uint64_t seq, bool failed) {
  const int64_t now = flight_now_us();
  std::lock_guard lock(mutex_);
  FlightEntry& entry = ring_[seq % ring_.size()];
  if (entry.seq != seq || entry.queued_us == 0) return;
  entry.state = failed ? FlightState::kFailed : FlightState::kDone;
  if (entry.started_us == 0) entry.started_us = now;
  entry.finished_us = now;
  version_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<FlightEntry> FlightRecorder::entries() const {
  std::vector<FlightEntry> out;
  {
    std::lock_guard lock(mutex_);
    for (const FlightEntry& entry : ring_) {
      if (entry.queued_us != 0) out.push_back(entry);
    }
  }
  std::sort(out.begin(), out.end(), [](const FlightEntry& a, const FlightEntry& b) { return a.seq < b.seq; });
  return out;
}

// ---- Publishing this rank's position ----

// Another rank's published position: its latest collective and when it last showed a sign of life.
struct FlightRecorder::Position {
  bool has_entry = false;
  FlightEntry latest;
  int64_t reported_us = 0;
  std::string process;  // "pid N on host H"
};

namespace {

// One line, fields separated by tabs (the caller and the detail may hold spaces):
// reported_us pid host has_entry seq state op dtype ndim dims(comma) numel bytes queued started finished detail caller
std::string encode_position(const FlightEntry* latest, int64_t now) {
  std::ostringstream line;
  line << now << '\t' << getpid() << '\t' << host_name() << '\t' << (latest ? 1 : 0);
  if (latest != nullptr) {
    const FlightEntry& e = *latest;
    line << '\t' << e.seq << '\t' << static_cast<int>(e.state) << '\t' << e.op << '\t' << e.dtype << '\t' << e.ndim
         << '\t';
    for (int d = 0; d < std::min(e.ndim, FlightEntry::kMaxDims); ++d) line << (d ? "," : "") << e.dims[d];
    line << '\t' << e.numel << '\t' << e.bytes << '\t' << e.queued_us << '\t' << e.started_us << '\t'
         << e.finished_us << '\t' << e.detail << '\t' << e.caller;
  }
  return line.str();
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

}  // namespace

std::string FlightRecorder::position_line() const {
  std::lock_guard lock(mutex_);
  const FlightEntry& latest = ring_[latest_seq_ % ring_.size()];
  const bool has = recorded_ > 0 && latest.seq == latest_seq_;
  return encode_position(has ? &latest : nullptr, flight_now_us());
}

namespace {

// A FileStore appends every write to its log and replays the whole log on every operation: a position published
// several times a second would slow it without bound, so over a FileStore nothing is published.
bool keeps_every_write(const std::shared_ptr<Store>& store) {
  const Store* base = store.get();
  while (const auto* prefixed = dynamic_cast<const PrefixStore*>(base)) base = prefixed->underlying().get();
  return dynamic_cast<const FileStore*>(base) != nullptr;
}

}  // namespace

void FlightRecorder::start_publisher() {
  if (!store_ || size_ <= 1) return;
  if (keeps_every_write(store_)) {
    store_.reset();
    return;
  }
  std::thread([self = shared_from_this()] { self->publish_loop(); }).detach();
}

void FlightRecorder::stop() {
  {
    std::lock_guard lock(publisher_mutex_);
    stopping_ = true;
  }
  publisher_wake_.notify_all();
}

void FlightRecorder::publish_loop() {
  uint64_t published_version = ~0ull;
  int64_t published_at = 0;
  std::string seen_request;
  const std::string key = kStateKey + std::to_string(rank_);
  for (;;) {
    {
      std::unique_lock lock(publisher_mutex_);
      if (publisher_wake_.wait_for(lock, kPublishEvery, [&] { return stopping_; })) return;
    }
    const uint64_t version = version_.load(std::memory_order_relaxed);
    const int64_t now = flight_now_us();
    const bool alive_due = now - published_at >= kAliveEveryUs;
    if (version == published_version && !alive_due) continue;
    try {
      store_->set(key, position_line());
      published_version = version;
      published_at = now;
      if (alive_due && store_->check({kDumpRequestKey})) {
        const std::string request = store_->get_string(kDumpRequestKey);
        if (request != seen_request) {
          seen_request = request;
          if (is_fresh_request_of_another_rank(request)) {
            // A rank that failed itself has written the dump that explains its own failure already.
            if (!failed_.load()) dump("rank " + request);
            store_->set(kDumpedKey + std::to_string(rank_), request);
          }
        }
      }
    } catch (const std::exception&) {
      // The store is gone (the job is ending) or slow: the next round tries again.
      published_at = now;
    }
  }
}

// "<rank> failed at <us>: <reason>" of another rank, made after this recorder was created (not a request left in
// the store by an earlier attempt of the job).
bool FlightRecorder::is_fresh_request_of_another_rank(const std::string& request) const {
  const size_t at = request.find(" failed at ");
  if (at == std::string::npos || request.substr(0, at) == std::to_string(rank_)) return false;
  const size_t colon = request.find(':', at);
  const std::optional<int64_t> when = to_int(request.substr(at + 11, colon - at - 11));
  return when && *when >= created_us_;
}

std::optional<std::vector<std::pair<int, std::string>>> FlightRecorder::read_positions(
    const std::string& request, std::chrono::milliseconds limit) const {
  // A thread of its own, abandoned when the store does not answer in time (its server may be the stopped rank).
  using Lines = std::optional<std::vector<std::pair<int, std::string>>>;
  auto result = std::make_shared<std::promise<Lines>>();
  std::future<Lines> future = result->get_future();
  std::thread([store = store_, size = size_, rank = rank_, request, result] {
    Lines lines;
    try {
      lines.emplace();
      // The ranks that showed a sign of life lately get up to kAckWait to write their dumps (their publishing
      // thread looks for the request every second); a stopped or dead rank is not waited for.
      std::vector<std::string> acks;
      for (int r = 0; r < size; ++r) {
        const std::string key = kStateKey + std::to_string(r);
        if (r == rank || !store->check({key})) continue;
        const std::vector<std::string> fields = split_tabs(store->get_string(key));
        if (flight_now_us() - to_int(fields[0]).value_or(0) < kSilentAfterUs) {
          acks.push_back(kDumpedKey + std::to_string(r));
        }
      }
      const auto deadline = std::chrono::steady_clock::now() + kAckWait;
      for (const std::string& key : acks) {
        while (std::chrono::steady_clock::now() < deadline &&
               !(store->check({key}) && store->get_string(key) == request)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
      for (int r = 0; r < size; ++r) {
        const std::string key = kStateKey + std::to_string(r);
        if (r != rank && store->check({key})) lines->emplace_back(r, store->get_string(key));
      }
    } catch (const std::exception&) {
      lines.reset();  // the store failed
    }
    result->set_value(std::move(lines));
  }).detach();
  if (future.wait_for(limit) != std::future_status::ready) return std::nullopt;
  return future.get();
}

// ---- Dumps ----

std::string FlightRecorder::dump_path() const {
  std::string group = group_name_;
  std::replace_if(group.begin(), group.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  const std::filesystem::path dir = dir_.empty() ? std::filesystem::current_path() : std::filesystem::path(dir_);
  return (dir / ("syncgrad_flight_" + group + "_rank" + std::to_string(rank_) + ".json")).string();
}

std::string FlightRecorder::dump(const std::string& reason) {
  std::lock_guard dumping(dump_mutex_);
  std::string path;
  try {
    path = dump_path();
    nlohmann::json entries = nlohmann::json::array();
    for (const FlightEntry& e : this->entries()) {
      nlohmann::json shape = nullptr;
      if (e.ndim >= 0) {
        shape = nlohmann::json::array();
        for (int d = 0; d < std::min(e.ndim, FlightEntry::kMaxDims); ++d) shape.push_back(e.dims[d]);
      }
      entries.push_back({{"seq", e.seq}, {"op", e.op}, {"dtype", e.dtype}, {"shape", shape}, {"ndim", e.ndim},
                         {"numel", e.numel}, {"bytes", e.bytes}, {"detail", e.detail}, {"caller", e.caller},
                         {"state", flight_state_name(e.state)}, {"queued_us", e.queued_us},
                         {"started_us", e.started_us}, {"finished_us", e.finished_us}});
    }
    const nlohmann::json doc = {{"format", "syncgrad-flight-recorder 1"}, {"run", run_id_},
                                {"group", group_name_}, {"backend", backend_}, {"rank", rank_}, {"size", size_},
                                {"pid", getpid()}, {"host", host_name()}, {"capacity", ring_.size()},
                                {"dumped_us", flight_now_us()}, {"reason", reason}, {"entries", entries}};
    const std::string temporary = path + ".tmp" + std::to_string(getpid());
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << doc.dump(1) << '\n';
      out.close();
      if (!out) throw std::runtime_error("writing " + temporary + " failed: " + std::strerror(errno));
    }
    std::filesystem::rename(temporary, path);
    return path;
  } catch (const std::exception& e) {
    return "could not write the flight recorder's dump " + path + " (" + e.what() +
           "); set SYNCGRAD_FLIGHT_DIR to a writable directory";
  }
}

// ---- The explanation ----

std::string FlightRecorder::explain_failure(int64_t seq, const std::string& reason, bool waited) {
  const std::string first_line = reason.substr(0, std::min<size_t>(reason.find('\n'), 300));
  const std::string request =
      std::to_string(rank_) + " failed at " + std::to_string(flight_now_us()) + ": " + first_line;
  if (store_) {
    try {
      store_->set(kDumpRequestKey, request);
    } catch (const std::exception&) {
      // The store is gone: only this rank dumps.
    }
  }
  if (seq >= 0) mark_finished(static_cast<uint64_t>(seq), true);
  failed_.store(true);
  const std::string path = dump(first_line);
  const int64_t now = flight_now_us();

  std::vector<std::string> sentences;
  std::vector<std::pair<int, std::string>> positions;
  bool store_answered = true;
  if (store_ && size_ > 1) {
    std::optional<std::vector<std::pair<int, std::string>>> read = read_positions(request, kReadLimit);
    store_answered = read.has_value();
    if (read) positions = std::move(*read);
  }
  std::vector<char> published(static_cast<size_t>(size_), 0);
  for (const auto& [r, line] : positions) published[static_cast<size_t>(r)] = 1;
  for (int r = 0; r < size_ && store_ && store_answered; ++r) {
    if (r != rank_ && !published[static_cast<size_t>(r)]) {
      positions.emplace_back(r, "");
    }
  }
  std::sort(positions.begin(), positions.end());
  for (const auto& [r, line] : positions) {
    if (line.empty()) {
      sentences.push_back("rank " + std::to_string(r) +
                          " has not published a position (its recorder started less than 0.1 s ago, is off, or "
                          "cannot reach the store)");
      continue;
    }
    const std::vector<std::string> f = split_tabs(line);
    Position p;
    bool ok = f.size() >= 4;
    if (ok) {
      p.reported_us = to_int(f[0]).value_or(0);
      p.process = "pid " + f[1] + " on " + f[2];
      p.has_entry = f[3] == "1";
    }
    if (ok && p.has_entry) {
      ok = f.size() >= 17;
      if (ok) {
        FlightEntry& e = p.latest;
        e.seq = static_cast<uint64_t>(to_int(f[4]).value_or(0));
        e.state = static_cast<FlightState>(std::clamp<int64_t>(to_int(f[5]).value_or(0), 0, 3));
        copy_text(e.op, f[6]);
        copy_text(e.dtype, f[7]);
        e.ndim = static_cast<int32_t>(to_int(f[8]).value_or(-1));
        std::istringstream dims(f[9]);
        std::string dim;
        for (int d = 0; d < FlightEntry::kMaxDims && std::getline(dims, dim, ','); ++d) {
          e.dims[d] = to_int(dim).value_or(0);
        }
        e.numel = to_int(f[10]).value_or(0);
        e.bytes = to_int(f[11]).value_or(0);
        e.queued_us = to_int(f[12]).value_or(0);
        e.started_us = to_int(f[13]).value_or(0);
        e.finished_us = to_int(f[14]).value_or(0);
        copy_text(e.detail, f[15]);
        copy_text(e.caller, f[16]);
      }
    }
    if (!ok) {
      sentences.push_back("rank " + std::to_string(r) + " published an unreadable position");
      continue;
    }
    std::string text = "rank " + std::to_string(r);
    const FlightEntry& e = p.latest;
    if (!p.has_entry) {
      text += " has not called any collective yet";
    } else if (e.state == FlightState::kQueued) {
      text += " is stuck before " + flight_entry_summary(e) + ", queued " + seconds_ago(e.queued_us, now) +
              " ago and not started (an earlier collective of its group is still running)";
    } else if (e.state == FlightState::kStarted) {
      text += " is stuck in " + flight_entry_summary(e) + ", started " + seconds_ago(e.started_us, now) + " ago";
    } else if (seq >= 0 && static_cast<int64_t>(e.seq) < seq) {
      text += " never called collective #" + std::to_string(seq) + ": its last one, " + flight_entry_summary(e) +
              ", " + flight_state_name(e.state) + " " + seconds_ago(e.finished_us, now) + " ago";
    } else if (e.state == FlightState::kFailed) {
      text += " failed in " + flight_entry_summary(e) + " " + seconds_ago(e.finished_us, now) + " ago";
    } else {
      text += " has finished " + flight_entry_summary(e) + " (its latest), " + seconds_ago(e.finished_us, now) +
              " ago";
    }
    if (now - p.reported_us > kSilentAfterUs) {
      text += "; its recorder has been silent for " + seconds_ago(p.reported_us, now) + " (" + p.process +
              " is stopped, hung in the kernel, or gone)";
    }
    sentences.push_back(text);
  }

  std::string mine = "rank " + std::to_string(rank_);
  FlightEntry own;
  bool has_own = false;
  if (seq >= 0) {
    std::lock_guard lock(mutex_);
    const FlightEntry& e = ring_[static_cast<uint64_t>(seq) % ring_.size()];
    if (e.queued_us != 0 && e.seq == static_cast<uint64_t>(seq)) {
      own = e;
      has_own = true;
    }
  }
  if (has_own) {
    const int64_t since = own.started_us != 0 ? own.started_us : own.queued_us;
    mine += std::string(waited ? " waits in " : " failed in ") + flight_entry_summary(own) + ", started " +
            seconds_ago(since, now) + " ago";
  } else {
    mine += seq >= 0 ? " failed in collective #" + std::to_string(seq) : " found the desync";
  }
  sentences.push_back(mine);
  if (!store_answered) {
    sentences.push_back("the other ranks' positions could not be read from the store");
  } else if (!store_ && size_ > 1) {
    sentences.push_back("the other ranks' positions are unknown (the recorders publish them through the group's "
                        "store, and not through a FileStore)");
  }

  std::string text = "flight recorder";
  if (group_name_ != "world") text += " (" + group_name_ + ")";
  text += ": ";
  for (size_t i = 0; i < sentences.size(); ++i) text += (i ? "; " : "") + sentences[i];
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (path.rfind("could not", 0) == 0) {
    text += ". " + path;
  } else {
    text += ". This rank's recent collectives are in " + path +
            " (the other ranks write theirs next to it); see them merged with: syncgrad-debug flight " + dir;
  }
  return text;
}

std::exception_ptr FlightRecorder::explained(std::exception_ptr error, int64_t seq) {
  if (!error) return error;
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    return std::make_exception_ptr(
        TimeoutError(std::string(e.what()) + "\n" + explain_failure(seq, e.what(), true)));
  } catch (const PeerError& e) {
    return std::make_exception_ptr(PeerError(std::string(e.what()) + "\n" + explain_failure(seq, e.what())));
  } catch (const DesyncError& e) {
    return std::make_exception_ptr(DesyncError(std::string(e.what()) + "\n" + explain_failure(seq, e.what())));
  } catch (const RendezvousError&) {
    return error;
  } catch (const DistributedError& e) {
    return std::make_exception_ptr(DistributedError(std::string(e.what()) + "\n" + explain_failure(seq, e.what())));
  } catch (...) {
    return error;
  }
}

std::string flight_note(const std::shared_ptr<FlightRecorder>& recorder, const std::string& reason) {
  std::string note;
  if (recorder) note.append("\n").append(recorder->explain_failure(-1, reason));
  return note;
}

}  // namespace syncgrad::distributed
