// TCPStoreServer: one background thread serving the store to every client with poll() over non-blocking
// sockets and per-connection buffers. GET/WAIT requests are parked server-side and answered when their keys
// are set or their timeout expires; a client that misbehaves (malformed, oversized or unauthenticated
// messages, wrong token) loses its connection and nobody else notices. Protocol: tcp_store_protocol.h.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
// Pause before accepting again when out of descriptors.
constexpr std::chrono::milliseconds kAcceptPause{100};

// Compares without stopping at the first difference (the length is not secret).
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Conn {
  net::Fd fd;
  std::string peer;
  bool authenticated = false;
  Bytes in;
  size_t in_pos = 0;
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
  bool can_read() const { return !parked && !output_pending() && !closing; }
};

class Loop {
 public:
  Loop(std::string where, net::Fd listener, net::Fd wake, std::string token)
      : where_(std::move(where)), listener_(std::move(listener)), wake_(std::move(wake)), token_(std::move(token)) {}

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
  void on_event(uint64_t id, short revents);
  void read_input(uint64_t id);
  void process(uint64_t id);
  void handle(uint64_t id, Conn& c, Type type, proto::Reader& r);
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
  store_data::Table table_;
  std::map<uint64_t, Conn> conns_;
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
    }
    run_runnable();
    for (auto it = conns_.begin(); it != conns_.end();) {
      it = it->second.dead ? conns_.erase(it) : std::next(it);
    }
  }
}

void Loop::accept_all() {
  for (;;) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      std::fprintf(stderr, "syncgrad TCPStoreServer %s: cannot accept connections: %s\n", where_.c_str(),
                   net::errno_text(errno).c_str());
      accept_paused_until_ = net::Deadline::after(kAcceptPause);
      return;
    }
    net::set_nodelay(fd);
    Conn c;
    c.fd = net::Fd(fd);
    c.peer = net::peer_name(fd);
    conns_.emplace(next_id_++, std::move(c));
  }
}

void Loop::on_event(uint64_t id, short revents) {
  Conn& c = conns_.at(id);
  if (c.dead) return;
  if (revents & (POLLERR | POLLNVAL)) {
    drop(id, c, "");
    return;
  }
  if (c.closing && !c.output_pending()) {
    // Discard whatever the rejected client still sends; close on EOF.
    uint8_t sink[4096];
    for (;;) {
      ssize_t n = ::recv(c.fd.get(), sink, sizeof sink, MSG_DONTWAIT);
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
    const size_t old = c.in.size();
    c.in.resize(old + kReadChunk);
    ssize_t n = ::recv(c.fd.get(), c.in.data() + old, kReadChunk, MSG_DONTWAIT);
    c.in.resize(old + static_cast<size_t>(n > 0 ? n : 0));
    if (n > 0) {
      process(id);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    drop(id, c, "");  // EOF or reset: requests already complete were applied
    return;
  }
}

void Loop::process(uint64_t id) {
  Conn& c = conns_.at(id);
  while (!c.dead && c.can_read()) {
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
    if (avail < 4 + size_t{n}) break;
    proto::Reader r(head + proto::kHeaderBytes, n - 1);
    try {
      handle(id, c, type, r);
    } catch (const proto::ProtocolError& e) {
      drop(id, c, std::string("malformed ") + proto::type_name(raw_type) + ": " + e.what());
      return;
    } catch (const std::bad_alloc&) {
      drop(id, c, std::string("out of memory handling ") + proto::type_name(raw_type));
      return;
    }
    c.in_pos += 4 + size_t{n};
  }
  if (c.in_pos == c.in.size()) {
    c.in.clear();
    c.in_pos = 0;
    if (c.in.capacity() > 16 * kReadChunk) c.in.shrink_to_fit();  // after a large value
  } else if (c.in_pos > kReadChunk && c.in_pos * 2 > c.in.size()) {
    c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.in_pos));
    c.in_pos = 0;
  }
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
        reject(c, proto::kWrongToken);
        return;
      }
      c.authenticated = true;
      reply(c, proto::Writer(Type::kHelloOk).u32(proto::kMagic).u32(proto::kVersion).finish());
      return;
    }
    case Type::kSet: {
      std::string key = r.str(kMaxStoreKeyBytes);
      Bytes value = r.bytes(kMaxStoreValueBytes);
      r.finish();
      table_[key] = std::move(value);
      reply(c, proto::Writer(Type::kOk).finish());
      key_set(key);
      return;
    }
    case Type::kGet: {
      std::string key = r.str(kMaxStoreKeyBytes);
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
      std::string key = r.str(kMaxStoreKeyBytes);
      const int64_t delta = r.i64();
      r.finish();
      try {
        const int64_t value = store_data::add(table_, key, delta, "TCPStore");
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
      std::string key = r.str(kMaxStoreKeyBytes);
      Bytes expected = r.bytes(kMaxStoreValueBytes);
      Bytes desired = r.bytes(kMaxStoreValueBytes);
      r.finish();
      Bytes now = store_data::compare_set(table_, key, expected, desired);
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
  c.out.clear();
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
  reply(c, proto::Writer(Type::kTimeout).keys(missing).finish());
}

void Loop::drop(uint64_t id, Conn& c, const std::string& reason) {
  if (!reason.empty()) {
    std::fprintf(stderr, "syncgrad TCPStoreServer %s: dropped the connection from %s: %s\n", where_.c_str(),
                 c.peer.c_str(), reason.c_str());
  }
  unpark(id, c);
  c.dead = true;
}

void Loop::reject(Conn& c, const std::string& reason) {
  std::fprintf(stderr, "syncgrad TCPStoreServer %s: refused the client %s: %s\n", where_.c_str(), c.peer.c_str(),
               reason.c_str());
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

}  // namespace

struct TCPStoreServer::State {
  uint16_t port = 0;
  net::Fd wake_write;
  std::unique_ptr<Loop> loop;
  std::thread thread;
};

TCPStoreServer::TCPStoreServer(const std::string& host, uint16_t port, std::string token)
    : state_(std::make_unique<State>()) {
  net::Fd listener = net::listen_tcp(host, port, "TCPStoreServer");
  state_->port = net::local_port(listener.get());
  int pipe_fds[2];
  SYNCGRAD_CHECK(::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) == 0, DistributedError,
                 "TCPStoreServer: cannot create its wake-up pipe: ", net::errno_text(errno));
  net::Fd wake_read(pipe_fds[0]);
  state_->wake_write = net::Fd(pipe_fds[1]);
  state_->loop = std::make_unique<Loop>(net::host_port(host.empty() ? "*" : host, state_->port), std::move(listener),
                                        std::move(wake_read), std::move(token));
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
