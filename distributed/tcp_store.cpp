// TCPStore, the client side: a small pool of authenticated connections to the store server (one per thread
// with a request in flight, so a thread parked in get() never blocks another thread's set()), requests and
// replies with deadlines so a dead or silent server becomes an error instead of a hang. A handshake the
// server closes or answers "busy" (its connection bounds) is retried with back-off until the timeout.
// Protocol: tcp_store_protocol.h; the server: tcp_store_server.cpp.
#include "distributed/tcp_store.h"

#include <algorithm>
#include <initializer_list>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "distributed/errors.h"
#include "distributed/socket.h"
#include "distributed/tcp_store_data.h"
#include "distributed/tcp_store_protocol.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

namespace proto = store_protocol;
using proto::Type;

// How much longer than a get/wait timeout the client waits for the server's own TIMEOUT answer before it
// declares the server unresponsive.
constexpr std::chrono::milliseconds kReplyGrace{2000};

const char* const kConnectHint =
    "is rank 0 (or syncgrad-launch) running and serving the store there, is MASTER_ADDR/MASTER_PORT right, "
    "and does no firewall block the port?";

struct Reply {
  Type type;
  Bytes body;  // after the type byte
};

std::string millis(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

void check_key(const std::string& key, const char* op) {
  SYNCGRAD_CHECK(key.size() <= kMaxStoreKeyBytes, ValueError, "TCPStore.", op, ": the key is ", key.size(),
                 " bytes long, over the limit of ", kMaxStoreKeyBytes, " (kMaxStoreKeyBytes); use shorter keys");
}

void check_value(const Bytes& value, const char* op) {
  SYNCGRAD_CHECK(value.size() <= kMaxStoreValueBytes, ValueError, "TCPStore.", op, ": the value is ", value.size(),
                 " bytes, over the limit of ", kMaxStoreValueBytes,
                 " (kMaxStoreValueBytes); the store is for small setup data, send tensors with the process group");
}

void check_keys(const std::vector<std::string>& keys, const char* op) {
  SYNCGRAD_CHECK(keys.size() <= kMaxStoreKeysPerRequest, ValueError, "TCPStore.", op, ": ", keys.size(),
                 " keys in one request, over the limit of ", kMaxStoreKeysPerRequest,
                 " (kMaxStoreKeysPerRequest); split the request");
  for (const std::string& k : keys) check_key(k, op);
}

// Decodes a reply body, turning malformed content into a PeerError.
template <class Fn>
auto decode(const Bytes& body, const std::string& where, const std::string& op, Fn&& fn) {
  proto::Reader reader(body.data(), body.size());
  try {
    auto value = fn(reader);
    reader.finish();
    return value;
  } catch (const proto::ProtocolError& e) {
    throw PeerError("TCPStore." + op + ": malformed reply from the store server at " + where + ": " + e.what());
  }
}

// A TIMEOUT reply: the keys still missing and the server's note.
std::pair<std::vector<std::string>, std::string> read_timeout(proto::Reader& rd) {
  std::vector<std::string> missing = rd.keys();
  std::string note = rd.str(proto::kMaxMessageBytes);
  return {std::move(missing), std::move(note)};
}

}  // namespace

struct TCPStore::Connection {
  std::string host;
  uint16_t port = 0;
  std::string token;
  std::string where;  // host:port for messages
  std::mutex mutex;
  std::vector<net::Fd> idle;
  std::string lost;  // why the server is known to be gone; later requests fail at once

  // Connects (retrying until the timeout) and presents the token. A handshake the server closes before
  // answering, or answers "busy", is retried with back-off: the server sheds load that way.
  net::Fd open(std::chrono::milliseconds timeout) const {
    const net::Deadline deadline = net::Deadline::after(timeout);
    auto backoff = std::chrono::milliseconds(10);
    std::string last_refusal;
    for (;;) {
      const auto left = std::chrono::milliseconds(deadline.poll_timeout_ms());
      net::Fd fd = net::connect_with_retry(host, port, left, "TCPStore", kConnectHint);
      std::string refusal;
      if (handshake(fd, timeout, deadline, refusal)) return fd;
      last_refusal = refusal;
      if (deadline.expired()) break;
      std::this_thread::sleep_for(std::min(backoff, std::chrono::milliseconds(deadline.poll_timeout_ms())));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
      if (deadline.expired()) break;
    }
    throw RendezvousError("TCPStore: the store server at " + where + " did not take this client within " +
                          millis(timeout) + " (last: " + last_refusal +
                          "); it is overloaded or flooded with connections (its bounds are TCPStoreServerOptions::"
                          "max_connections and max_connections_per_address), or the port belongs to another "
                          "service that closes connections (check MASTER_ADDR/MASTER_PORT)");
  }

  // Presents the token on a new connection. False, with the reason, when the server closed the connection
  // before answering or answered "busy" (worth retrying); throws on every other failure.
  bool handshake(const net::Fd& fd, std::chrono::milliseconds timeout, net::Deadline deadline,
                 std::string& refusal) const {
    const Bytes hello = proto::Writer(Type::kHello).u32(proto::kMagic).u32(proto::kVersion).str(token).finish();
    Reply r;
    std::string failure;
    const Outcome outcome = exchange(fd, hello, deadline, r, failure);
    SYNCGRAD_CHECK(
        outcome != Outcome::kTimeout, RendezvousError, "TCPStore: connected to ", where,
        " but got no answer to the handshake within ", millis(timeout),
        "; the port may belong to another service than the store (check MASTER_PORT), or the server is stopped");
    if (outcome == Outcome::kClosed) {
      refusal = failure + " during the handshake";
      return false;
    }
    SYNCGRAD_CHECK(outcome != Outcome::kBroken, PeerError, "TCPStore: the handshake with ", where, " failed: ", failure,
                   "; is it a syncgrad store server (check MASTER_ADDR/MASTER_PORT)?");
    if (r.type == Type::kRejected) {
      proto::Reader reader(r.body.data(), r.body.size());
      std::string reason;
      try {
        reason = reader.str(proto::kMaxMessageBytes);
      } catch (const proto::ProtocolError&) {
        reason = "no reason given";
      }
      if (reason.rfind(proto::kBusy, 0) == 0) {
        refusal = "the server answered " + reason;
        return false;
      }
      SYNCGRAD_CHECK(reason == proto::kWrongToken, PeerError, "TCPStore: the store server at ", where,
                     " refused this client: ", reason);
      throw RendezvousError("TCPStore: the store at " + where +
                            " refused our token; the job's ranks must share SYNCGRAD_STORE_TOKEN (the server "
                            "rejected this process's token: it must be the one the launcher set for this job; is "
                            "another job using the same MASTER_ADDR:MASTER_PORT?)");
    }
    bool ok = r.type == Type::kHelloOk;
    if (ok) {
      proto::Reader reader(r.body.data(), r.body.size());
      try {
        ok = reader.u32() == proto::kMagic && reader.u32() == proto::kVersion;
        reader.finish();
      } catch (const proto::ProtocolError&) {
        ok = false;
      }
    }
    SYNCGRAD_CHECK(ok, PeerError, "TCPStore: ", where, " answered the handshake with ",
                   proto::type_name(uint8_t(r.type)),
                   "; it is not a syncgrad store server of this version (check MASTER_ADDR/MASTER_PORT)");
    return true;
  }

  // How one request/reply went: kClosed (the peer closed or reset the connection) and kBroken carry the
  // reason in `failure`.
  enum class Outcome { kOk, kTimeout, kClosed, kBroken };

  // Sends a frame and reads one reply before the deadline.
  Outcome exchange(const net::Fd& fd, const Bytes& frame, net::Deadline deadline, Reply& reply,
                   std::string& failure) const {
    auto broken = [&](const net::IoResult& io) {
      if (io.status == net::IoStatus::kTimeout) return Outcome::kTimeout;
      failure = io.error == 0 ? "the server closed the connection"
                              : "the connection broke (" + net::errno_text(io.error) + ")";
      return io.status == net::IoStatus::kClosed ? Outcome::kClosed : Outcome::kBroken;
    };
    net::IoResult io = net::send_all(fd.get(), frame.data(), frame.size(), deadline);
    if (io.status != net::IoStatus::kOk) return broken(io);
    uint8_t head[proto::kHeaderBytes];
    io = net::recv_exact(fd.get(), head, sizeof head, deadline);
    if (io.status != net::IoStatus::kOk) return broken(io);
    const uint32_t n = proto::load_u32(head);
    const size_t limit = head[4] >= 0x80 ? proto::max_body(head[4]) : 0;
    if (limit == 0 || n < 1 || n > limit) {
      failure = "malformed reply (type " + std::to_string(head[4]) + ", " + std::to_string(n) + " bytes)";
      return Outcome::kBroken;
    }
    reply.type = static_cast<Type>(head[4]);
    reply.body.resize(n - 1);
    io = net::recv_exact(fd.get(), reply.body.data(), reply.body.size(), deadline);
    if (io.status != net::IoStatus::kOk) return broken(io);
    return Outcome::kOk;
  }

  // One request/reply on an idle (or new) connection. `expected` lists the reply types that fit the request;
  // ERROR replies become ValueError.
  Reply request(const Bytes& frame, const std::string& op, std::chrono::milliseconds connect_timeout,
                std::chrono::milliseconds reply_timeout, std::initializer_list<Type> expected) {
    net::Fd fd;
    {
      std::lock_guard<std::mutex> lock(mutex);
      SYNCGRAD_CHECK(lost.empty(), PeerError, "TCPStore.", op, ": the store server at ", where, " is gone (", lost,
                     "); is rank 0 / the launcher still running?");
      if (!idle.empty()) {
        fd = std::move(idle.back());
        idle.pop_back();
      }
    }
    if (!fd.valid()) fd = open(connect_timeout);
    Reply r;
    std::string failure;
    const Outcome outcome = exchange(fd, frame, net::Deadline::after(reply_timeout), r, failure);
    SYNCGRAD_CHECK(outcome != Outcome::kTimeout, TimeoutError, "TCPStore.", op, ": no reply from the store server at ",
                   where, " within ", millis(reply_timeout), "; the server process may be stopped or overloaded");
    if (outcome == Outcome::kBroken || outcome == Outcome::kClosed) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        lost = failure + " during " + op;
        idle.clear();
      }
      throw PeerError("TCPStore." + op + ": the store server at " + where + " failed mid-request: " + failure +
                      " (did rank 0 / the launcher exit or crash?)");
    }
    bool fits = r.type == Type::kError || r.type == Type::kRefused;
    for (Type t : expected) fits = fits || r.type == t;
    SYNCGRAD_CHECK(fits, PeerError, "TCPStore.", op, ": the store server at ", where, " answered ",
                   proto::type_name(uint8_t(r.type)), ", which does not fit the request");
    {
      std::lock_guard<std::mutex> lock(mutex);
      idle.push_back(std::move(fd));
    }
    SYNCGRAD_CHECK(r.type != Type::kError, ValueError,
                   decode(r.body, where, op, [](proto::Reader& rd) { return rd.str(proto::kMaxMessageBytes); }));
    SYNCGRAD_CHECK(r.type != Type::kRefused, ValueError, "TCPStore.", op, ": the store server at ", where,
                   " refused it: ",
                   decode(r.body, where, op, [](proto::Reader& rd) { return rd.str(proto::kMaxMessageBytes); }),
                   "; the store is for small setup data (send tensors with the process group), or raise the limit "
                   "where the store is served");
    return r;
  }
};

TCPStore::TCPStore(const std::string& host, uint16_t port, TCPStoreOptions options)
    : Store(options.timeout), host_(host), port_(port) {
  if (options.is_server) {
    server_ = std::make_unique<TCPStoreServer>(host, port, options.token, options.server);
    port_ = server_->port();
  }
  connection_ = std::make_unique<Connection>();
  const bool wildcard = host.empty() || host == "*";
  connection_->host = wildcard ? "127.0.0.1" : host;
  connection_->port = port_;
  connection_->token = std::move(options.token);
  connection_->where = net::host_port(connection_->host, port_);
  connection_->idle.push_back(connection_->open(options.timeout));
}

TCPStore::~TCPStore() = default;

uint16_t TCPStore::port() const { return port_; }

const std::string& TCPStore::host() const { return host_; }

void TCPStore::set(const std::string& key, const Bytes& value) {
  check_key(key, "set");
  check_value(value, "set");
  connection_->request(proto::Writer(Type::kSet).str(key).str(value).finish(),
                       "set(" + store_data::quote_key(key) + ")", timeout(), timeout(), {Type::kOk});
}

Bytes TCPStore::get(const std::string& key) {
  check_key(key, "get");
  const auto t = store_data::clamp_timeout(timeout());
  const std::string op = "get(" + store_data::quote_key(key) + ")";
  Reply r = connection_->request(proto::Writer(Type::kGet).str(key).i64(t.count()).finish(), op, t, t + kReplyGrace,
                                 {Type::kValue, Type::kTimeout});
  const std::string& where = connection_->where;
  if (r.type == Type::kTimeout) {
    auto [missing, note] = decode(r.body, where, op, read_timeout);
    store_data::throw_timeout("TCPStore(" + where + ")", op, t, missing, note);
  }
  return decode(r.body, where, op, [](proto::Reader& rd) { return rd.bytes(kMaxStoreValueBytes); });
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  check_key(key, "add");
  const std::string op = "add(" + store_data::quote_key(key) + ")";
  Reply r = connection_->request(proto::Writer(Type::kAdd).str(key).i64(delta).finish(), op, timeout(), timeout(),
                                 {Type::kInt});
  return decode(r.body, connection_->where, op, [](proto::Reader& rd) { return rd.i64(); });
}

Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  check_key(key, "compare_set");
  check_value(expected, "compare_set");
  check_value(desired, "compare_set");
  const std::string op = "compare_set(" + store_data::quote_key(key) + ")";
  Reply r = connection_->request(proto::Writer(Type::kCompareSet).str(key).str(expected).str(desired).finish(), op,
                                 timeout(), timeout(), {Type::kValue});
  return decode(r.body, connection_->where, op, [](proto::Reader& rd) { return rd.bytes(kMaxStoreValueBytes); });
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  check_keys(keys, "check");
  Reply r = connection_->request(proto::Writer(Type::kCheck).keys(keys).finish(), "check", timeout(), timeout(),
                                 {Type::kBool});
  return decode(r.body, connection_->where, "check", [](proto::Reader& rd) { return rd.u8() != 0; });
}

bool TCPStore::delete_key(const std::string& key) {
  check_key(key, "delete_key");
  const std::string op = "delete_key(" + store_data::quote_key(key) + ")";
  Reply r =
      connection_->request(proto::Writer(Type::kDelete).str(key).finish(), op, timeout(), timeout(), {Type::kBool});
  return decode(r.body, connection_->where, op, [](proto::Reader& rd) { return rd.u8() != 0; });
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  check_keys(keys, "wait");
  const auto t = store_data::clamp_timeout(timeout);
  Reply r = connection_->request(proto::Writer(Type::kWait).keys(keys).i64(t.count()).finish(), "wait", this->timeout(),
                                 t + kReplyGrace, {Type::kOk, Type::kTimeout});
  if (r.type == Type::kTimeout) {
    const std::string& where = connection_->where;
    auto [missing, note] = decode(r.body, where, "wait", read_timeout);
    store_data::throw_timeout("TCPStore(" + where + ")", "wait", t, missing, note);
  }
}

}  // namespace syncgrad::distributed
