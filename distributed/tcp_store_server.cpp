// TCPStoreServer: one background thread serving the store to every client with poll() over non-blocking
// sockets and per-connection buffers. GET/WAIT requests are parked server-side and answered when their keys
// are set or their timeout expires; a client that misbehaves (malformed, oversized or unauthenticated
// messages, wrong token) loses its connection and nobody else notices. Admission control keeps idle or
// hostile connections from locking real clients out: a handshake timeout, bounds per address and in total
// that evict the oldest connection still without HELLO, no buffer for a connection before it sends data,
// and rate-limited log lines. Requests over the server's data limits are REFUSED and their bodies skipped.
// Protocol: tcp_store_protocol.h.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "distributed/errors.h"
#include "distributed/socket.h"
#include "distributed/tcp_store.h"
#include "distributed/tcp_store_data.h"
#include "distributed/tcp_store_log.h"
#include "distributed/tcp_store_protocol.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

namespace proto = store_protocol;
using proto::Type;

constexpr size_t kReadChunk = 64 * 1024;
// After a rejection the server half-closes and discards input this long, so the client reads the reason
// instead of a connection reset.
constexpr std::chrono::milliseconds kDrainTime{2000};
// Pause before accepting again when out of descriptors with no connection left to evict.
constexpr std::chrono::milliseconds kAcceptPause{100};
// Accepts per loop iteration, so a connection flood cannot starve the clients already connected.
constexpr int kAcceptsPerRound = 256;
// Key lists (CHECK, WAIT) may be as large as one value, and at least this large.
constexpr size_t kMinKeyListBytes = 1u << 20;
// Addresses named individually in the wrong-token note.
constexpr size_t kMaxNamedRefusedAddresses = 8;

// A request over one of the server's own limits: answered with REFUSED, nothing applied.
struct Refusal {
  std::string message;
};

std::string numeric_host(const sockaddr_storage& storage) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (storage.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text, sizeof text);
  } else if (storage.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text, sizeof text);
  }
  return text;
}

std::string plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Compares without stopping at the first difference (the length is not secret).
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Conn {
  net::Fd fd;
  std::string peer;     // "10.0.0.2:41234"
  std::string address;  // "10.0.0.2": the unit of the per-address bounds
  bool authenticated = false;
  std::optional<net::Deadline> handshake_deadline;  // until authenticated
  Bytes in;  // empty (no allocation) until the client sends something
  size_t in_pos = 0;
  size_t discard = 0;  // bytes of a REFUSED frame still to skip as they arrive
  Bytes out;
  size_t out_pos = 0;
  bool dead = false;
  // A GET or WAIT waiting for keys.
  bool parked = false;
  Type parked_type = Type::kWait;
  std::vector<std::string> parked_keys;
  std::optional<net::Deadline> parked_deadline;
  // Rejected: flush the reply, half-close, discard input until EOF or the drain deadline.
  bool closing = false;
  std::optional<net::Deadline> drain_deadline;

  bool output_pending() const { return out_pos < out.size(); }
  // Ready for the next request (a REFUSED frame's body is skipped whatever else is pending).
  bool can_process() const { return discard == 0 && !parked && !output_pending() && !closing; }
  bool can_read() const { return discard > 0 || can_process(); }
};

// Connections of one peer address.
struct AddressLoad {
  size_t all = 0;
  std::set<uint64_t> pending;  // without a valid HELLO yet, oldest first
};

class Loop {
 public:
  Loop(std::string where, net::Fd listener, net::Fd wake, std::string token, const TCPStoreServerOptions& options)
      : where_(std::move(where)),
        listener_(std::move(listener)),
        wake_(std::move(wake)),
        token_(std::move(token)),
        options_(options),
        log_("syncgrad TCPStoreServer " + where_),
        scratch_(kReadChunk) {}

  void run() {
    try {
      serve();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "syncgrad TCPStoreServer %s: stopped serving: %s\n", where_.c_str(), e.what());
      // Closing every socket turns waiting clients' requests into errors instead of hangs.
      conns_.clear();
      listener_.reset();
    }
  }

 private:
  void serve();
  void accept_all();
  void admit(net::Fd fd, const sockaddr_storage& peer);
  bool evict_oldest(const std::string* address, const std::string& why);
  void refuse_busy(net::Fd fd, const std::string& peer, const std::string& reason);
  void erase(uint64_t id);
  void forget(uint64_t id, const Conn& c);
  void authenticated(uint64_t id, Conn& c);
  void on_event(uint64_t id, short revents);
  void read_input(uint64_t id);
  void take_input(Conn& c, const uint8_t* data, size_t size);
  void process(uint64_t id);
  std::optional<std::string> oversize(Type type, uint32_t n, const uint8_t* head, size_t avail) const;
  size_t frame_limit(Type type) const;
  void handle(uint64_t id, Conn& c, Type type, proto::Reader& r);
  std::string read_key(proto::Reader& r) const;
  Bytes read_value(proto::Reader& r, const char* what) const;
  void check_growth(const std::string& key, size_t old_bytes, size_t new_bytes) const;
  size_t entry_bytes(const std::string& key) const;
  std::string refused_note() const;
  void flush(Conn& c);
  void reply(Conn& c, Bytes frame);
  void park(uint64_t id, Conn& c, Type type, std::vector<std::string> keys, int64_t timeout_ms);
  void unpark(uint64_t id, Conn& c);
  void answer_parked(uint64_t id, Conn& c);
  void key_set(const std::string& key);
  void expire(Conn& c, uint64_t id);
  void drop(uint64_t id, Conn& c, const std::string& reason);
  void reject(Conn& c, const std::string& reason);
  void run_runnable();

  std::string where_;
  net::Fd listener_;
  net::Fd wake_;
  std::string token_;
  TCPStoreServerOptions options_;
  store_log::RateLimitedLog log_;
  Bytes scratch_;  // every recv() lands here first: no connection owns a read buffer it does not need
  store_data::Table table_;
  size_t table_bytes_ = 0;  // keys and values held
  std::map<uint64_t, Conn> conns_;
  std::set<uint64_t> pending_;  // connections without a valid HELLO, oldest first
  std::map<std::string, AddressLoad> addresses_;
  std::map<std::string, size_t> refused_tokens_;  // wrong-token refusals per address (the first few)
  size_t refused_tokens_total_ = 0;
  std::map<std::string, std::set<uint64_t>> waiters_;
  std::vector<uint64_t> runnable_;
  uint64_t next_id_ = 0;
  std::optional<net::Deadline> accept_paused_until_;
};

void Loop::serve() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_.get(), POLLIN, 0});
    if (accept_paused_until_ && accept_paused_until_->expired()) accept_paused_until_.reset();
    fds.push_back({accept_paused_until_ ? -1 : listener_.get(), POLLIN, 0});
    std::optional<net::Deadline> next;
    auto consider = [&](const std::optional<net::Deadline>& d) {
      if (d) next = next ? next->earlier(*d) : *d;
    };
    consider(accept_paused_until_);
    for (auto& [id, c] : conns_) {
      short events = POLLRDHUP;
      if (c.closing && !c.output_pending()) {
        events |= POLLIN;
      } else {
        if (c.can_read()) events |= POLLIN;
        if (c.output_pending()) events |= POLLOUT;
      }
      fds.push_back({c.fd.get(), events, 0});
      ids.push_back(id);
      if (c.parked) consider(c.parked_deadline);
      consider(c.drain_deadline);
      if (!c.closing) consider(c.handshake_deadline);
    }
    int rc = ::poll(fds.data(), fds.size(), next ? next->poll_timeout_ms() : -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll failed: " + net::errno_text(errno));
    }
    if (fds[0].revents != 0) return;  // the owner asked us to stop
    if (fds[1].revents != 0) accept_all();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (fds[i + 2].revents != 0) on_event(ids[i], fds[i + 2].revents);
    }
    for (auto& [id, c] : conns_) {
      if (c.dead) continue;
      if (c.parked && c.parked_deadline && c.parked_deadline->expired()) expire(c, id);
      if (c.drain_deadline && c.drain_deadline->expired()) c.dead = true;
      if (!c.closing && c.handshake_deadline && c.handshake_deadline->expired()) {
        log_.print("handshake", "closed the connection from " + c.peer + ": no valid HELLO within " +
                                    std::to_string(options_.handshake_timeout.count()) + " ms (handshake_timeout)");
        c.dead = true;
      }
    }
    run_runnable();
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (it->second.dead) {
        forget(it->first, it->second);
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void Loop::accept_all() {
  for (int round = 0; round < kAcceptsPerRound; ++round) {
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      const bool out_of_fds = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
      if (out_of_fds && evict_oldest(nullptr, "out of descriptors")) {
        log_.print("accept", "cannot accept connections: " + net::errno_text(err) +
                                 "; closed the oldest connection without a HELLO to make room");
        continue;
      }
      log_.print("accept", "cannot accept connections: " + net::errno_text(err));
      accept_paused_until_ = net::Deadline::after(kAcceptPause);
      return;
    }
    admit(net::Fd(fd), peer);
  }
}

// Applies the connection bounds to a newly accepted connection: evicts the oldest connections still without
// a HELLO to make room, or refuses the new one when only authenticated connections hold the places.
void Loop::admit(net::Fd fd, const sockaddr_storage& peer) {
  const std::string address = numeric_host(peer);
  std::string peer_text = net::peer_name(fd.get());
  if (conns_.size() >= options_.max_connections && !evict_oldest(nullptr, "max_connections")) {
    refuse_busy(std::move(fd), peer_text,
                "the store serves " + plural(conns_.size(), "connection") + ", its limit (max_connections)");
    return;
  }
  auto load = [&]() -> AddressLoad& { return addresses_[address]; };
  if (load().all >= options_.max_connections_per_address && !evict_oldest(&address, "max_connections_per_address")) {
    refuse_busy(std::move(fd), peer_text,
                "the store serves " + plural(load().all, "connection") + " from " + address +
                    ", its limit per address (max_connections_per_address)");
    return;
  }
  if (load().pending.size() >= options_.max_pending_per_address) evict_oldest(&address, "max_pending_per_address");
  if (pending_.size() >= options_.max_pending) evict_oldest(nullptr, "max_pending");
  net::set_nodelay(fd.get());
  const uint64_t id = next_id_++;
  Conn c;
  c.fd = std::move(fd);
  c.peer = std::move(peer_text);
  c.address = address;
  c.handshake_deadline = net::Deadline::after(options_.handshake_timeout);
  conns_.emplace(id, std::move(c));
  pending_.insert(id);
  AddressLoad& l = load();
  ++l.all;
  l.pending.insert(id);
}

// Closes the oldest connection without a valid HELLO (from `address`, or from anywhere); false when there is
// none. A connection whose HELLO is already waiting in its socket is served first instead of evicted.
bool Loop::evict_oldest(const std::string* address, const std::string& why) {
  for (;;) {
    const std::set<uint64_t>* candidates = &pending_;
    if (address != nullptr) {
      auto it = addresses_.find(*address);
      if (it == addresses_.end()) return false;
      candidates = &it->second.pending;
    }
    if (candidates->empty()) return false;
    const uint64_t id = *candidates->begin();
    Conn& c = conns_.at(id);
    if (!c.dead && c.can_read()) {
      read_input(id);
      if (c.authenticated && !c.dead) continue;
    }
    log_.print("evict", "closed the connection from " + c.peer + " before its HELLO to make room (" + why + ")");
    if (!c.dead && !c.closing) {
      const Bytes frame =
          proto::Writer(Type::kRejected).str(std::string(proto::kBusy) + "too many connections (" + why + ")").finish();
      (void)::send(c.fd.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    erase(id);
    return true;
  }
}

void Loop::refuse_busy(net::Fd fd, const std::string& peer, const std::string& reason) {
  log_.print("busy", "refused the connection from " + peer + ": " + reason);
  const Bytes frame = proto::Writer(Type::kRejected).str(std::string(proto::kBusy) + reason).finish();
  (void)::send(fd.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Loop::erase(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  unpark(id, it->second);
  forget(id, it->second);
  conns_.erase(it);
}

// Removes a connection from the admission bookkeeping (before it is erased).
void Loop::forget(uint64_t id, const Conn& c) {
  pending_.erase(id);
  auto it = addresses_.find(c.address);
  if (it == addresses_.end()) return;
  it->second.pending.erase(id);
  if (it->second.all > 0) --it->second.all;
  if (it->second.all == 0) addresses_.erase(it);
}

void Loop::authenticated(uint64_t id, Conn& c) {
  c.authenticated = true;
  c.handshake_deadline.reset();
  pending_.erase(id);
  auto it = addresses_.find(c.address);
  if (it != addresses_.end()) it->second.pending.erase(id);
}

void Loop::on_event(uint64_t id, short revents) {
  auto found = conns_.find(id);
  if (found == conns_.end()) return;  // evicted during this round
  Conn& c = found->second;
  if (c.dead) return;
  if (revents & (POLLERR | POLLNVAL)) {
    drop(id, c, "");
    return;
  }
  if (c.closing && !c.output_pending()) {
    // Discard whatever the rejected client still sends; close on EOF.
    for (;;) {
      ssize_t n = ::recv(c.fd.get(), scratch_.data(), scratch_.size(), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.dead = true;
      return;
    }
  }
  if ((revents & POLLOUT) && c.output_pending()) {
    flush(c);
    if (c.dead) return;
    process(id);  // requests that arrived behind the reply just sent
  }
  if (revents & (POLLIN | POLLRDHUP | POLLHUP)) {
    if (c.can_read()) {
      read_input(id);
    } else if (revents & (POLLRDHUP | POLLHUP)) {
      drop(id, c, "");  // the client went away while its request was parked or its reply pending
    }
  }
}

void Loop::read_input(uint64_t id) {
  Conn& c = conns_.at(id);
  while (!c.dead && c.can_read()) {
    ssize_t n = ::recv(c.fd.get(), scratch_.data(), scratch_.size(), MSG_DONTWAIT);
    if (n > 0) {
      take_input(c, scratch_.data(), static_cast<size_t>(n));
      process(id);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    drop(id, c, "");  // EOF or reset: requests already complete were applied
    return;
  }
}

// Appends received bytes to the connection's buffer, after skipping what is left of a refused frame.
void Loop::take_input(Conn& c, const uint8_t* data, size_t size) {
  const size_t skip = std::min(c.discard, size);
  c.discard -= skip;
  c.in.insert(c.in.end(), data + skip, data + size);
}

void Loop::process(uint64_t id) {
  Conn& c = conns_.at(id);
  while (!c.dead && c.can_process()) {
    const size_t avail = c.in.size() - c.in_pos;
    if (avail < proto::kHeaderBytes) break;
    const uint8_t* head = c.in.data() + c.in_pos;
    const uint32_t n = proto::load_u32(head);
    const uint8_t raw_type = head[4];
    const size_t limit = raw_type < 0x80 ? proto::max_body(raw_type) : 0;
    if (limit == 0) {
      drop(id, c, "unknown request type " + std::to_string(raw_type));
      return;
    }
    const auto type = static_cast<Type>(raw_type);
    if (!c.authenticated && type != Type::kHello) {
      drop(id, c, std::string(proto::type_name(raw_type)) + " request before the token (HELLO)");
      return;
    }
    if (c.authenticated && type == Type::kHello) {
      drop(id, c, "second HELLO on one connection");
      return;
    }
    if (n < 1 || n > limit) {
      drop(id, c,
           std::string(proto::type_name(raw_type)) + " message of " + std::to_string(n) + " bytes (limit " +
               std::to_string(limit) + ")");
      return;
    }
    const size_t frame = 4 + size_t{n};
    if (n > frame_limit(type)) {
      std::optional<std::string> why;
      try {
        why = oversize(type, n, head, avail);
      } catch (const proto::ProtocolError& e) {
        drop(id, c, std::string("malformed ") + proto::type_name(raw_type) + ": " + e.what());
        return;
      }
      if (!why) break;  // the few bytes that say which field is too large have not arrived yet
      const size_t have = std::min(avail, frame);
      c.in_pos += have;
      c.discard = frame - have;
      reply(c, proto::Writer(Type::kRefused).str(*why).finish());
      continue;
    }
    if (avail < frame) {
      if (c.in.capacity() < c.in_pos + frame) c.in.reserve(c.in_pos + frame);  // one allocation for a large value
      break;
    }
    proto::Reader r(head + proto::kHeaderBytes, n - 1);
    try {
      handle(id, c, type, r);
    } catch (const Refusal& refusal) {
      reply(c, proto::Writer(Type::kRefused).str(refusal.message).finish());
    } catch (const proto::ProtocolError& e) {
      drop(id, c, std::string("malformed ") + proto::type_name(raw_type) + ": " + e.what());
      return;
    } catch (const std::bad_alloc&) {
      drop(id, c, std::string("out of memory handling ") + proto::type_name(raw_type));
      return;
    }
    c.in_pos += frame;
  }
  if (c.in_pos == c.in.size()) {
    c.in.clear();
    c.in_pos = 0;
    if (c.in.capacity() > kReadChunk) c.in.shrink_to_fit();  // after a large value, or before the HELLO
  } else if (c.in_pos > kReadChunk && c.in_pos * 2 > c.in.size()) {
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_pos));
    c.in_pos = 0;
  }
}

// The largest frame (body length N) of a request type under this server's limits.
size_t Loop::frame_limit(Type type) const {
  const size_t key = 4 + options_.max_key_bytes;
  const size_t value = 4 + options_.max_value_bytes;
  const size_t key_list = 4 + std::max(options_.max_value_bytes, kMinKeyListBytes);
  size_t mine = 0;
  switch (type) {
    case Type::kSet: mine = 1 + key + value; break;
    case Type::kGet:
    case Type::kAdd: mine = 1 + key + 8; break;
    case Type::kCompareSet: mine = 1 + key + 2 * value; break;
    case Type::kDelete: mine = 1 + key; break;
    case Type::kCheck: mine = 1 + key_list; break;
    case Type::kWait: mine = 1 + key_list + 8; break;
    default: mine = proto::max_body(uint8_t(type)); break;
  }
  return std::min(mine, proto::max_body(uint8_t(type)));
}

std::string key_limit_text(size_t size, size_t limit) {
  return "a key of " + std::to_string(size) + " bytes is over this store's limit of " + std::to_string(limit) +
         " bytes per key (TCPStoreServerOptions::max_key_bytes)";
}

std::string value_limit_text(const char* what, size_t size, size_t limit) {
  return std::string(what) + " of " + std::to_string(size) + " bytes is over this store's limit of " +
         std::to_string(limit) + " bytes per value (TCPStoreServerOptions::max_value_bytes)";
}

// Why a frame over frame_limit() is refused, from its first fields; nullopt while they have not arrived.
std::optional<std::string> Loop::oversize(Type type, uint32_t n, const uint8_t* head, size_t avail) const {
  const uint8_t* body = head + proto::kHeaderBytes;
  const size_t fields = n - 1;
  const bool keyed = type != Type::kCheck && type != Type::kWait;  // the body starts with one key
  if (keyed) {
    if (avail < proto::kHeaderBytes + 4) return std::nullopt;
    const size_t key = proto::load_u32(body);
    if (key > kMaxStoreKeyBytes || 4 + key > fields) throw proto::ProtocolError("bad key length");
    if (key > options_.max_key_bytes) return key_limit_text(key, options_.max_key_bytes);
  }
  if (type == Type::kSet || type == Type::kCompareSet) {
    const size_t key = proto::load_u32(body);
    if (4 + key + 4 > fields) throw proto::ProtocolError("bad key length");
    const size_t rest = fields - 4 - key - 4;  // after the key and the first value's length
    if (type == Type::kSet) return value_limit_text("a value", rest, options_.max_value_bytes);
    if (avail < proto::kHeaderBytes + 4 + key + 4) return std::nullopt;
    const size_t expected = proto::load_u32(body + 4 + key);
    if (expected + 4 > rest) throw proto::ProtocolError("bad expected-value length");
    if (expected > options_.max_value_bytes) {
      return value_limit_text("an expected value", expected, options_.max_value_bytes);
    }
    return value_limit_text("a desired value", rest - expected - 4, options_.max_value_bytes);
  }
  return std::string("a request of type ") + proto::type_name(uint8_t(type)) + " of " + std::to_string(n) +
         " bytes is over this store's limit of " + std::to_string(frame_limit(type)) +
         " bytes for it (keys up to " + std::to_string(options_.max_key_bytes) +
         " bytes: TCPStoreServerOptions::max_key_bytes; key lists up to the size of one value)";
}

std::string Loop::read_key(proto::Reader& r) const {
  std::string key = r.str(kMaxStoreKeyBytes);
  if (key.size() > options_.max_key_bytes) throw Refusal{key_limit_text(key.size(), options_.max_key_bytes)};
  return key;
}

Bytes Loop::read_value(proto::Reader& r, const char* what) const {
  Bytes value = r.bytes(kMaxStoreValueBytes);
  if (value.size() > options_.max_value_bytes) {
    throw Refusal{value_limit_text(what, value.size(), options_.max_value_bytes)};
  }
  return value;
}

size_t Loop::entry_bytes(const std::string& key) const {
  auto it = table_.find(key);
  return it == table_.end() ? 0 : key.size() + it->second.size();
}

// Refuses a change of key's entry from old_bytes to new_bytes that would take the store over max_total_bytes.
void Loop::check_growth(const std::string& key, size_t old_bytes, size_t new_bytes) const {
  if (new_bytes <= old_bytes) return;
  const size_t after = table_bytes_ - old_bytes + new_bytes;
  if (after <= options_.max_total_bytes) return;
  throw Refusal{"storing " + std::to_string(new_bytes) + " bytes under " + store_data::quote_key(key) +
                " would bring the store to " + std::to_string(after) + " bytes, over its limit of " +
                std::to_string(options_.max_total_bytes) +
                " bytes in total (TCPStoreServerOptions::max_total_bytes; it holds " + plural(table_.size(), "key") +
                " of " + std::to_string(table_bytes_) + " bytes); delete keys that are no longer needed"};
}

std::string Loop::refused_note() const {
  if (refused_tokens_total_ == 0) return "";
  std::string from;
  size_t named = 0;
  for (const auto& [address, count] : refused_tokens_) {
    if (!from.empty()) from += ", ";
    from += address;
    named += count;
  }
  if (named < refused_tokens_total_) from += " and other addresses";
  std::string note = "the store has refused " + plural(refused_tokens_total_, "connection") +
                     " with a wrong token from " + from +
                     " (a rank started with another SYNCGRAD_STORE_TOKEN, or another job on this port?)";
  if (note.size() > proto::kMaxMessageBytes) note.resize(proto::kMaxMessageBytes);
  return note;
}

void Loop::handle(uint64_t id, Conn& c, Type type, proto::Reader& r) {
  switch (type) {
    case Type::kHello: {
      const uint32_t magic = r.u32();
      const uint32_t version = r.u32();
      std::string token = r.str(kMaxStoreKeyBytes);
      r.finish();
      SYNCGRAD_CHECK(magic == proto::kMagic, proto::ProtocolError, "not a syncgrad store client");
      if (version != proto::kVersion) {
        reject(c, "protocol version " + std::to_string(version) + " is not supported; this server speaks " +
                      std::to_string(proto::kVersion) + " (mixed syncgrad versions in one job?)");
        return;
      }
      if (!same_token(token, token_)) {
        ++refused_tokens_total_;
        if (refused_tokens_.size() < kMaxNamedRefusedAddresses || refused_tokens_.count(c.address) != 0) {
          ++refused_tokens_[c.address];
        }
        reject(c, proto::kWrongToken);
        return;
      }
      authenticated(id, c);
      reply(c, proto::Writer(Type::kHelloOk).u32(proto::kMagic).u32(proto::kVersion).finish());
      return;
    }
    case Type::kSet: {
      std::string key = read_key(r);
      Bytes value = read_value(r, "a value");
      r.finish();
      const size_t old_bytes = entry_bytes(key);
      const size_t new_bytes = key.size() + value.size();
      check_growth(key, old_bytes, new_bytes);
      table_[key] = std::move(value);
      table_bytes_ = table_bytes_ - old_bytes + new_bytes;
      reply(c, proto::Writer(Type::kOk).finish());
      key_set(key);
      return;
    }
    case Type::kGet: {
      std::string key = read_key(r);
      const int64_t timeout_ms = r.i64();
      r.finish();
      auto it = table_.find(key);
      if (it != table_.end()) {
        reply(c, proto::Writer(Type::kValue).str(it->second).finish());
      } else {
        park(id, c, type, {std::move(key)}, timeout_ms);
      }
      return;
    }
    case Type::kAdd: {
      std::string key = read_key(r);
      const int64_t delta = r.i64();
      r.finish();
      constexpr size_t kMaxCounterDigits = 20;  // "-9223372036854775808"
      const size_t old_bytes = entry_bytes(key);
      if (old_bytes == 0) check_growth(key, 0, key.size() + kMaxCounterDigits);
      try {
        const int64_t value = store_data::add(table_, key, delta, "TCPStore");
        table_bytes_ = table_bytes_ - old_bytes + entry_bytes(key);
        reply(c, proto::Writer(Type::kInt).i64(value).finish());
      } catch (const ValueError& e) {
        std::string message = e.what();
        if (message.size() > proto::kMaxMessageBytes) message.resize(proto::kMaxMessageBytes);
        reply(c, proto::Writer(Type::kError).str(message).finish());
        return;
      }
      key_set(key);
      return;
    }
    case Type::kCompareSet: {
      std::string key = read_key(r);
      Bytes expected = read_value(r, "an expected value");
      Bytes desired = read_value(r, "a desired value");
      r.finish();
      const size_t old_bytes = entry_bytes(key);
      auto it = table_.find(key);
      const bool swaps = it == table_.end() ? expected.empty() : it->second == expected;
      if (swaps) check_growth(key, old_bytes, key.size() + desired.size());
      Bytes now = store_data::compare_set(table_, key, expected, desired);
      table_bytes_ = table_bytes_ - old_bytes + entry_bytes(key);
      reply(c, proto::Writer(Type::kValue).str(now).finish());
      if (table_.count(key) != 0) key_set(key);
      return;
    }
    case Type::kCheck: {
      std::vector<std::string> keys = r.keys();
      r.finish();
      const bool all = store_data::missing(table_, keys).empty();
      reply(c, proto::Writer(Type::kBool).u8(all ? 1 : 0).finish());
      return;
    }
    case Type::kDelete: {
      std::string key = r.str(kMaxStoreKeyBytes);
      r.finish();
      table_bytes_ -= entry_bytes(key);
      const bool existed = table_.erase(key) != 0;
      reply(c, proto::Writer(Type::kBool).u8(existed ? 1 : 0).finish());
      return;
    }
    case Type::kWait: {
      std::vector<std::string> keys = r.keys();
      const int64_t timeout_ms = r.i64();
      r.finish();
      if (store_data::missing(table_, keys).empty()) {
        reply(c, proto::Writer(Type::kOk).finish());
      } else {
        park(id, c, type, std::move(keys), timeout_ms);
      }
      return;
    }
    default: throw proto::ProtocolError("not a request");
  }
}

void Loop::reply(Conn& c, Bytes frame) {
  if (c.out_pos == c.out.size()) {
    c.out = std::move(frame);
    c.out_pos = 0;
  } else {
    c.out.insert(c.out.end(), frame.begin(), frame.end());
  }
  flush(c);
}

void Loop::flush(Conn& c) {
  while (c.output_pending()) {
    ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    c.dead = true;  // the client is gone (a connection with output pending is never parked)
    return;
  }
  c.out = Bytes();  // a large VALUE reply does not stay allocated
  c.out_pos = 0;
  if (c.closing) {
    ::shutdown(c.fd.get(), SHUT_WR);
    c.drain_deadline = net::Deadline::after(kDrainTime);
  }
}

void Loop::park(uint64_t id, Conn& c, Type type, std::vector<std::string> keys, int64_t timeout_ms) {
  c.parked = true;
  c.parked_type = type;
  c.parked_keys = std::move(keys);
  c.parked_deadline = net::Deadline::after(std::chrono::milliseconds(timeout_ms));
  for (const std::string& k : c.parked_keys) waiters_[k].insert(id);
}

void Loop::unpark(uint64_t id, Conn& c) {
  if (!c.parked) return;
  for (const std::string& k : c.parked_keys) {
    auto it = waiters_.find(k);
    if (it == waiters_.end()) continue;
    it->second.erase(id);
    if (it->second.empty()) waiters_.erase(it);
  }
  c.parked = false;
  c.parked_keys.clear();
  c.parked_deadline.reset();
  runnable_.push_back(id);  // requests buffered behind the parked one
}

void Loop::answer_parked(uint64_t id, Conn& c) {
  Bytes frame = c.parked_type == Type::kGet ? proto::Writer(Type::kValue).str(table_.at(c.parked_keys.front())).finish()
                                            : proto::Writer(Type::kOk).finish();
  unpark(id, c);
  reply(c, std::move(frame));
}

void Loop::key_set(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  const std::vector<uint64_t> ids(it->second.begin(), it->second.end());
  for (uint64_t id : ids) {
    Conn& c = conns_.at(id);
    if (c.parked && store_data::missing(table_, c.parked_keys).empty()) answer_parked(id, c);
  }
}

void Loop::expire(Conn& c, uint64_t id) {
  std::vector<std::string> missing = store_data::missing(table_, c.parked_keys);
  unpark(id, c);
  reply(c, proto::Writer(Type::kTimeout).keys(missing).str(refused_note()).finish());
}

void Loop::drop(uint64_t id, Conn& c, const std::string& reason) {
  if (!reason.empty()) log_.print("drop", "dropped the connection from " + c.peer + ": " + reason);
  unpark(id, c);
  c.dead = true;
}

void Loop::reject(Conn& c, const std::string& reason) {
  log_.print("reject", "refused the client " + c.peer + ": " + reason);
  c.closing = true;
  reply(c, proto::Writer(Type::kRejected).str(reason).finish());
}

void Loop::run_runnable() {
  while (!runnable_.empty()) {
    std::vector<uint64_t> batch;
    batch.swap(runnable_);
    for (uint64_t id : batch) {
      auto it = conns_.find(id);
      if (it != conns_.end() && !it->second.dead) process(id);
    }
  }
}

// True when the listener is bound to a loopback address only (127.0.0.0/8, ::1 or a v4-mapped 127.x).
bool listens_on_loopback_only(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return false;
  if (storage.ss_family == AF_INET) {
    const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (storage.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

void warn_open_store_once(const std::string& where) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr,
               "syncgrad TCPStoreServer %s: warning: the store listens beyond loopback without a token, so anyone "
               "who reaches the port can read and write this job's keys or join it; set SYNCGRAD_STORE_TOKEN to the "
               "same secret on every rank, or start the job with syncgrad-launch (which sets one)\n",
               where.c_str());
}

// Checks the options against the wire limits and lowers max_connections to fit the open-file limit.
TCPStoreServerOptions checked(TCPStoreServerOptions o) {
  SYNCGRAD_CHECK(o.max_key_bytes >= 1 && o.max_key_bytes <= kMaxStoreKeyBytes, ValueError,
                 "TCPStoreServer: max_key_bytes ", o.max_key_bytes, " is outside 1..", kMaxStoreKeyBytes,
                 " (kMaxStoreKeyBytes, the wire limit)");
  SYNCGRAD_CHECK(o.max_value_bytes <= kMaxStoreValueBytes, ValueError, "TCPStoreServer: max_value_bytes ",
                 o.max_value_bytes, " is over ", kMaxStoreValueBytes, " (kMaxStoreValueBytes, the wire limit)");
  SYNCGRAD_CHECK(o.handshake_timeout.count() > 0, ValueError, "TCPStoreServer: handshake_timeout ",
                 o.handshake_timeout.count(), " ms must be positive");
  SYNCGRAD_CHECK(o.max_connections >= 1 && o.max_connections_per_address >= 1 && o.max_pending >= 1 &&
                     o.max_pending_per_address >= 1,
                 ValueError, "TCPStoreServer: the connection bounds (max_connections ", o.max_connections,
                 ", max_connections_per_address ", o.max_connections_per_address, ", max_pending ", o.max_pending,
                 ", max_pending_per_address ", o.max_pending_per_address, ") must be at least 1");
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const size_t usable = std::max<size_t>(16, static_cast<size_t>(files.rlim_cur) / 4 * 3);
    o.max_connections = std::min(o.max_connections, usable);
  }
  return o;
}

}  // namespace

struct TCPStoreServer::State {
  uint16_t port = 0;
  net::Fd wake_write;
  std::unique_ptr<Loop> loop;
  std::thread thread;
};

TCPStoreServer::TCPStoreServer(const std::string& host, uint16_t port, std::string token,
                               TCPStoreServerOptions options)
    : state_(std::make_unique<State>()) {
  options = checked(options);
  net::Fd listener = net::listen_tcp(host, port, "TCPStoreServer");
  state_->port = net::local_port(listener.get());
  const std::string where = net::host_port(host.empty() ? "*" : host, state_->port);
  if (token.empty() && !listens_on_loopback_only(listener.get())) warn_open_store_once(where);
  int pipe_fds[2];
  SYNCGRAD_CHECK(::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) == 0, DistributedError,
                 "TCPStoreServer: cannot create its wake-up pipe: ", net::errno_text(errno));
  net::Fd wake_read(pipe_fds[0]);
  state_->wake_write = net::Fd(pipe_fds[1]);
  state_->loop =
      std::make_unique<Loop>(where, std::move(listener), std::move(wake_read), std::move(token), options);
  state_->thread = std::thread([loop = state_->loop.get()] { loop->run(); });
}

TCPStoreServer::~TCPStoreServer() {
  const uint8_t byte = 1;
  while (::write(state_->wake_write.get(), &byte, 1) < 0 && errno == EINTR) {
  }
  state_->thread.join();
}

uint16_t TCPStoreServer::port() const { return state_->port; }

}  // namespace syncgrad::distributed
