// TCPStore in one process: a server with several client threads, one client object shared by threads, connect
// retry, and every error path (port in use, unreachable or unresolvable master, silent server, wrong token,
// server gone mid-request, garbage / oversized / unauthenticated messages from raw sockets, client-side
// limits). Everything binds 127.0.0.1 on ephemeral ports.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/socket.h"
#include "distributed/tcp_store.h"
#include "distributed/tcp_store_protocol.h"
#include "tests/check_error.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace std::chrono_literals;
using syncgrad::testing::check_error;
namespace proto = syncgrad::distributed::store_protocol;

namespace {

using Clock = std::chrono::steady_clock;

TCPStoreOptions client_options(std::string token = "", std::chrono::milliseconds timeout = 5s) {
  TCPStoreOptions o;
  o.timeout = timeout;
  o.token = std::move(token);
  return o;
}

// A 127.0.0.1 socket bound to an ephemeral port but not listening: connecting to it is refused, and nobody
// else can take the port while it is held.
struct ReservedPort {
  net::Fd fd;
  uint16_t port = 0;
  ReservedPort() {
    fd = net::Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    port = net::local_port(fd.get());
  }
};

// A blocking raw connection to the server, for speaking out of protocol.
net::Fd raw_connect(uint16_t port) {
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

void raw_send(const net::Fd& fd, const Bytes& bytes) {
  CHECK(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

// True when the peer closes the connection within the limit (whatever it sent before is discarded).
bool closed_by_server(const net::Fd& fd, std::chrono::milliseconds limit = 5s) {
  const auto deadline = Clock::now() + limit;
  uint8_t buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return true;
  }
  return false;
}

Bytes hello(const std::string& token) {
  return proto::Writer(proto::Type::kHello).u32(proto::kMagic).u32(proto::kVersion).str(token).finish();
}

// Reads one reply frame (blocking, with a generous limit); returns its type byte.
int read_reply_type(const net::Fd& fd) {
  uint8_t head[proto::kHeaderBytes];
  if (net::recv_exact(fd.get(), head, sizeof head, net::Deadline::after(5s)).status != net::IoStatus::kOk) return -1;
  Bytes body(proto::load_u32(head) - 1);
  if (net::recv_exact(fd.get(), body.data(), body.size(), net::Deadline::after(5s)).status != net::IoStatus::kOk) {
    return -1;
  }
  return head[4];
}

// After an abusive connection was dropped, a well-behaved client still gets full service.
void check_still_serving(uint16_t port, const std::string& token) {
  TCPStore good("127.0.0.1", port, client_options(token));
  good.set("alive", "yes");
  CHECK(good.get_string("alive") == "yes");
  CHECK(good.add("alive_count", 1) >= 1);
}

}  // namespace

TEST_CASE("TCPStore: one server, several client threads rendezvous") {
  TCPStoreServer server("127.0.0.1", 0, "job-token");
  REQUIRE(server.port() != 0);
  constexpr int kClients = 6;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int rank = 0; rank < kClients; ++rank) {
    threads.emplace_back([&, rank] {
      TCPStore store("127.0.0.1", server.port(), client_options("job-token"));
      store.set("addr/" + std::to_string(rank), "host" + std::to_string(rank));
      const int64_t arrived = store.add("arrived", 1);
      std::vector<std::string> keys;
      for (int r = 0; r < kClients; ++r) keys.push_back("addr/" + std::to_string(r));
      store.wait(keys, 5s);
      bool all = arrived >= 1 && arrived <= kClients;
      for (int r = 0; r < kClients; ++r) all = all && store.get_string(keys[r]) == "host" + std::to_string(r);
      // Exactly one thread becomes the leader through compare_set.
      const Bytes leader = store.compare_set("leader", {}, to_bytes(std::to_string(rank)));
      all = all && !leader.empty();
      if (all) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == kClients);
  TCPStore check("127.0.0.1", server.port(), client_options("job-token"));
  CHECK(check.get_string("arrived") == std::to_string(kClients));
  const int leader = std::stoi(check.get_string("leader"));
  CHECK((leader >= 0 && leader < kClients));
}

TEST_CASE("TCPStore: the server owned by an is_server store serves other clients") {
  TCPStoreOptions o = client_options("t");
  o.is_server = true;
  TCPStore master("127.0.0.1", 0, o);
  CHECK(master.port() != 0);
  CHECK(master.host() == "127.0.0.1");
  TCPStore worker("127.0.0.1", master.port(), client_options("t"));
  worker.set("from_worker", "w");
  CHECK(master.get_string("from_worker") == "w");
}

TEST_CASE("TCPStore: one client object shared by threads (a parked get does not block a set)") {
  TCPStoreServer server("127.0.0.1", 0, "");
  TCPStore store("127.0.0.1", server.port(), client_options());
  std::atomic<bool> got{false};
  std::thread waiter([&] { got = store.get_string("key") == "value"; });
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  store.set("key", "value");  // the same object, from another thread, while get() waits
  waiter.join();
  CHECK(got);
  CHECK(Clock::now() - start < 4s);
}

TEST_CASE("TCPStore: clients retry until the server appears") {
  auto reserved = std::make_unique<ReservedPort>();
  const uint16_t port = reserved->port;
  std::atomic<bool> connected{false};
  std::string error;
  std::thread client([&] {
    try {
      TCPStore store("127.0.0.1", port, client_options("", 10s));
      connected = store.get_string("hello") == "world";
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(300ms);
  reserved.reset();  // free the port for the server
  TCPStoreServer server("127.0.0.1", port, "");
  TCPStore local("127.0.0.1", port, client_options());
  local.set("hello", "world");
  client.join();
  CHECK_MESSAGE(connected, error);
}

TEST_CASE("TCPStore: a port in use names host:port and the fix") {
  TCPStoreServer first("127.0.0.1", 0, "");
  const std::string where = "127.0.0.1:" + std::to_string(first.port());
  check_error<RendezvousError>(
      [&] { TCPStoreServer second("127.0.0.1", first.port(), ""); },
      {"TCPStoreServer: cannot serve on " + where, "already in use", "another job or a previous run still holds it",
       "choose another MASTER_PORT", "syncgrad-launch pick a free port"});
  TCPStoreOptions o;
  o.is_server = true;
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", first.port(), o); }, {where, "already in use"});
}

TEST_CASE("TCPStore: an unreachable master is a RendezvousError after the timeout") {
  ReservedPort nobody;
  const auto start = Clock::now();
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", nobody.port, client_options("", 300ms)); },
                               {"127.0.0.1:" + std::to_string(nobody.port), "within 300 ms", "Connection refused",
                                "rank 0", "MASTER_ADDR", "firewall"});
  const auto elapsed = Clock::now() - start;
  CHECK(elapsed >= 250ms);  // it retried, not just failed once
  CHECK(elapsed < 10s);
}

TEST_CASE("TCPStore: a host that does not resolve is named") {
  check_error<RendezvousError>([] { TCPStore s("no-such-host.invalid", 29500, client_options("", 300ms)); },
                               {"TCPStore", "no-such-host.invalid", "cannot resolve", "MASTER_ADDR"});
  check_error<RendezvousError>([] { TCPStoreServer s("no-such-host.invalid", 0, ""); },
                               {"TCPStoreServer", "no-such-host.invalid"});
}

TEST_CASE("TCPStore: a listener that never answers the handshake does not hang the client") {
  net::Fd silent = net::listen_tcp("127.0.0.1", 0, "test");  // accepts into the backlog, never reads
  const uint16_t port = net::local_port(silent.get());
  const auto start = Clock::now();
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", port, client_options("", 300ms)); },
                               {"127.0.0.1:" + std::to_string(port), "no answer to the handshake"});
  CHECK(Clock::now() - start < 10s);
}

TEST_CASE("TCPStore: a wrong token is rejected; the server keeps serving the right one") {
  TCPStoreServer server("127.0.0.1", 0, "right");
  const std::string where = "127.0.0.1:" + std::to_string(server.port());
  // Told at once (not after the timeout), as a rendezvous mistake.
  const auto start = Clock::now();
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", server.port(), client_options("wrong", 60s)); },
                               {"the store at " + where + " refused our token",
                                "the job's ranks must share SYNCGRAD_STORE_TOKEN", "rejected this process's token",
                                "must be the one the launcher set"});
  CHECK(Clock::now() - start < 30s);
  // An empty token is a token too: both sides still do the handshake.
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", server.port(), client_options("")); },
                               {"refused our token"});
  TCPStoreServer open_server("127.0.0.1", 0, "");
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", open_server.port(), client_options("x")); },
                               {"refused our token"});
  TCPStore fine("127.0.0.1", open_server.port(), client_options(""));
  fine.set("k", "v");
  check_still_serving(server.port(), "right");
}

TEST_CASE("TCPStore: raw sockets with garbage, oversized lengths or requests before the token are dropped") {
  TCPStoreServer server("127.0.0.1", 0, "tok");
  const uint16_t port = server.port();
  // A client parked in get() throughout: the abuse must not disturb it.
  std::atomic<bool> waiter_ok{false};
  std::thread waiter([&] {
    TCPStore w("127.0.0.1", port, client_options("tok"));
    waiter_ok = w.get_string("released") == "1";
  });

  SUBCASE("text garbage") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, to_bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    CHECK(closed_by_server(fd));
  }
  SUBCASE("oversized length before the token") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, Bytes{0xff, 0xff, 0xff, 0xff, 0x01});
    CHECK(closed_by_server(fd));
  }
  SUBCASE("oversized SET after a valid token") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, hello("tok"));
    CHECK(read_reply_type(fd) == int(proto::Type::kHelloOk));
    raw_send(fd, Bytes{0xff, 0xff, 0xff, 0x7f, uint8_t(proto::Type::kSet)});
    CHECK(closed_by_server(fd));
  }
  SUBCASE("a well-formed SET before the token is refused and not applied") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, proto::Writer(proto::Type::kSet).str(std::string("sneaky")).str(std::string("1")).finish());
    CHECK(closed_by_server(fd));
    TCPStore good("127.0.0.1", port, client_options("tok"));
    CHECK_FALSE(good.check({"sneaky"}));
  }
  SUBCASE("a wrong token on a raw socket gets a REJECTED reply, then EOF") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, hello("bad"));
    CHECK(read_reply_type(fd) == int(proto::Type::kRejected));
    CHECK(closed_by_server(fd));
  }
  SUBCASE("another protocol version is refused with a reason") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, proto::Writer(proto::Type::kHello).u32(proto::kMagic).u32(99).str(std::string("tok")).finish());
    CHECK(read_reply_type(fd) == int(proto::Type::kRejected));
    CHECK(closed_by_server(fd));
  }
  SUBCASE("a HELLO with the wrong magic is garbage") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, proto::Writer(proto::Type::kHello).u32(0x12345678).u32(1).str(std::string("tok")).finish());
    CHECK(closed_by_server(fd));
  }
  SUBCASE("malformed fields: a key length past the end of the message") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, hello("tok"));
    CHECK(read_reply_type(fd) == int(proto::Type::kHelloOk));
    raw_send(fd, Bytes{6, 0, 0, 0, uint8_t(proto::Type::kDelete), 0xff, 0, 0, 0, 'k'});
    CHECK(closed_by_server(fd));
  }
  SUBCASE("an unknown request type and a reply type sent as a request") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, hello("tok"));
    CHECK(read_reply_type(fd) == int(proto::Type::kHelloOk));
    raw_send(fd, Bytes{1, 0, 0, 0, 0x42});
    CHECK(closed_by_server(fd));
    net::Fd fd2 = raw_connect(port);
    raw_send(fd2, hello("tok"));
    CHECK(read_reply_type(fd2) == int(proto::Type::kHelloOk));
    raw_send(fd2, Bytes{1, 0, 0, 0, uint8_t(proto::Type::kOk)});
    CHECK(closed_by_server(fd2));
  }
  SUBCASE("a key list longer than the limit") {
    net::Fd fd = raw_connect(port);
    raw_send(fd, hello("tok"));
    CHECK(read_reply_type(fd) == int(proto::Type::kHelloOk));
    Bytes check = proto::Writer(proto::Type::kCheck).u32(uint32_t(kMaxStoreKeysPerRequest + 1)).finish();
    check.resize(check.size() + 64, 0);  // more bytes than the declared body
    raw_send(fd, check);
    CHECK(closed_by_server(fd));
  }
  SUBCASE("a client that connects and vanishes mid-frame") {
    {
      net::Fd fd = raw_connect(port);
      raw_send(fd, Bytes{50, 0, 0, 0, uint8_t(proto::Type::kHello), 1, 2});
    }
  }

  check_still_serving(port, "tok");
  TCPStore releaser("127.0.0.1", port, client_options("tok"));
  releaser.set("released", "1");
  waiter.join();
  CHECK(waiter_ok);
}

TEST_CASE("TCPStore: get and wait timeouts name the keys and the timeout") {
  TCPStoreServer server("127.0.0.1", 0, "");
  TCPStore store("127.0.0.1", server.port(), client_options("", 150ms));
  store.set("here", "1");
  const std::string where = "127.0.0.1:" + std::to_string(server.port());
  check_error<TimeoutError>([&] { store.get("never"); }, {"TCPStore(" + where + ").get('never')",
                                                          "timed out after 150 ms", "keys still missing: 'never'"});
  check_error<TimeoutError>(
      [&] {
        store.wait({"here", "gone1", "gone2"}, 100ms);
      },
      {"wait", "100 ms", "'gone1', 'gone2'"});
  // The connection is still in sync after timeouts.
  CHECK(store.get_string("here") == "1");
}

TEST_CASE("TCPStore: the server going away while a client waits is a PeerError, not a hang") {
  auto server = std::make_unique<TCPStoreServer>("127.0.0.1", 0, "");
  const uint16_t port = server->port();
  TCPStore store("127.0.0.1", port, client_options("", 60s));
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    server.reset();
  });
  const auto start = Clock::now();
  check_error<PeerError>([&] { store.get("never"); },
                         {"127.0.0.1:" + std::to_string(port), "get('never')", "closed the connection", "rank 0"});
  stopper.join();
  CHECK(Clock::now() - start < 10s);
  // Later requests fail at once instead of retrying for the whole timeout.
  const auto again = Clock::now();
  check_error<PeerError>([&] { store.set("k", "v"); }, {"is gone"});
  CHECK(Clock::now() - again < 2s);
}

TEST_CASE("TCPStore: client-side limits are ValueErrors before anything is sent") {
  TCPStoreServer server("127.0.0.1", 0, "");
  TCPStore store("127.0.0.1", server.port(), client_options());
  const std::string long_key(kMaxStoreKeyBytes + 1, 'k');
  check_error<ValueError>([&] { store.set(long_key, "v"); }, {"kMaxStoreKeyBytes", "4097"});
  check_error<ValueError>([&] { store.get(long_key); }, {"kMaxStoreKeyBytes"});
  check_error<ValueError>([&] { store.wait({"a", long_key}, 1s); }, {"kMaxStoreKeyBytes"});
  const Bytes too_big(kMaxStoreValueBytes + 1, 0);
  check_error<ValueError>([&] { store.set("k", too_big); }, {"kMaxStoreValueBytes"});
  check_error<ValueError>([&] { store.compare_set("k", {}, too_big); }, {"kMaxStoreValueBytes"});
  std::vector<std::string> many(kMaxStoreKeysPerRequest + 1, "k");
  check_error<ValueError>([&] { store.check(many); }, {"kMaxStoreKeysPerRequest"});
  // A key at the limit and a large value still work.
  const std::string max_key(kMaxStoreKeyBytes, 'm');
  Bytes big(1 << 20, 7);
  store.set(max_key, big);
  CHECK(store.get(max_key) == big);
}

TEST_CASE("TCPStore: pipelined raw requests are answered in order, a parked GET holding back the rest") {
  TCPStoreServer server("127.0.0.1", 0, "");
  net::Fd fd = raw_connect(server.port());
  Bytes batch = hello("");
  for (const Bytes& frame : {proto::Writer(proto::Type::kSet).str(std::string("a")).str(std::string("1")).finish(),
                             proto::Writer(proto::Type::kGet).str(std::string("later")).i64(5000).finish(),
                             proto::Writer(proto::Type::kAdd).str(std::string("n")).i64(2).finish()}) {
    batch.insert(batch.end(), frame.begin(), frame.end());
  }
  raw_send(fd, batch);
  CHECK(read_reply_type(fd) == int(proto::Type::kHelloOk));
  CHECK(read_reply_type(fd) == int(proto::Type::kOk));
  TCPStore other("127.0.0.1", server.port(), client_options());
  CHECK_FALSE(other.check({"n"}));  // the ADD waits behind the parked GET
  other.set("later", "now");
  CHECK(read_reply_type(fd) == int(proto::Type::kValue));
  CHECK(read_reply_type(fd) == int(proto::Type::kInt));
  CHECK(other.get_string("n") == "2");
}

TEST_CASE("TCPStore: many clients and an abusive one at the same time") {
  TCPStoreServer server("127.0.0.1", 0, "tok");
  std::atomic<bool> stop{false};
  std::thread abuser([&] {
    for (int i = 0; !stop && i < 200; ++i) {
      net::Fd fd = raw_connect(server.port());
      const Bytes junk{uint8_t(i), 0xff, uint8_t(i * 7), 0x00, uint8_t(i % 9), 1, 2, 3};
      ::send(fd.get(), junk.data(), junk.size(), MSG_NOSIGNAL);
    }
  });
  constexpr int kClients = 16;
  constexpr int kOps = 40;
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      try {
        TCPStore store("127.0.0.1", server.port(), client_options("tok"));
        for (int i = 0; i < kOps; ++i) {
          const std::string key = std::to_string(t) + "/" + std::to_string(i);
          store.set(key, key);
          if (store.get_string(key) != key) ++failures;
          store.add("total", 1);
        }
        // Every client waits for a key the next one sets: parked requests all over the server.
        store.set("ring/" + std::to_string(t), "x");
        store.wait({"ring/" + std::to_string((t + 1) % kClients)}, 5s);
      } catch (const std::exception& e) {
        MESSAGE(e.what());
        ++failures;
      }
    });
  }
  for (auto& c : clients) c.join();
  stop = true;
  abuser.join();
  CHECK(failures == 0);
  TCPStore check("127.0.0.1", server.port(), client_options("tok"));
  CHECK(check.get_string("total") == std::to_string(kClients * kOps));
}
