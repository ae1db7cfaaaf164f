// TCPStoreServer's admission control and data limits, in one process on 127.0.0.1: the handshake timeout,
// the per-address bound on connections without a HELLO (idle ones evicted, real ranks still meet), "busy"
// refusals retried by the client, memory per idle connection, key/value/total limits refused with a typed
// error while the connection and the server go on, the wrong-token note in the waiting side's timeout, the
// warning for a tokenless store beyond loopback, and the rate-limited log. Ephemeral ports only.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/tcp_store.h"
#include "distributed/tcp_store_log.h"
#include "tests/check_error.h"
#include "tests/distributed/store_raw_client.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace syncgrad::test::store_raw;
using namespace std::chrono_literals;
using syncgrad::testing::check_error;

namespace {

TCPStoreOptions client(const std::string& token = "tok", std::chrono::milliseconds timeout = 20s) {
  TCPStoreOptions o;
  o.token = token;
  o.timeout = timeout;
  return o;
}

// A raw connection that has completed its HELLO.
net::Fd authenticated_raw(uint16_t port, const std::string& token = "tok") {
  net::Fd fd = connect_raw(port);
  REQUIRE(fd.valid());
  REQUIRE(send_raw(fd, hello_frame(token)));
  REQUIRE(read_reply(fd).type == int(proto::Type::kHelloOk));
  return fd;
}

// Runs fn in a forked child with stderr sent to a pipe; returns what the child wrote there.
std::string stderr_of_child(const std::function<void()>& fn) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    try {
      fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child threw: %s\n", e.what());
    }
    std::fflush(stderr);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1) break;
    ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("TCPStoreServer: a connection without a HELLO is closed after the handshake timeout") {
  TCPStoreServerOptions o;
  o.handshake_timeout = 300ms;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  net::Fd ready = authenticated_raw(server.port());
  net::Fd idle = connect_raw(server.port());
  net::Fd partial = connect_raw(server.port());
  REQUIRE(send_raw(partial, Bytes{40, 0, 0, 0, uint8_t(proto::Type::kHello), 0x53}));  // half a HELLO
  CHECK(closed_by_peer(idle, 20s));
  CHECK(closed_by_peer(partial, 20s));
  // An authenticated connection is never timed out: it outlived the idle ones and still gets answers.
  CHECK(still_open_and_silent(ready));
  REQUIRE(send_raw(ready, proto::Writer(proto::Type::kAdd).str(std::string("n")).i64(5).finish()));
  CHECK(read_reply(ready).type == int(proto::Type::kInt));
}

TEST_CASE("TCPStoreServer: idle connections over the per-address bound are evicted oldest first; ranks still meet") {
  TCPStoreServerOptions o;
  o.max_pending_per_address = 8;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  std::vector<net::Fd> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(connect_raw(server.port()));
  std::atomic<int> met{0};
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        TCPStore store("127.0.0.1", server.port(), client());
        store.set("rank/" + std::to_string(rank), "here");
        store.wait({"rank/0", "rank/1"});
        ++met;
      } catch (const std::exception& e) {
        MESSAGE(e.what());
      }
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(met == 2);
  // The oldest idle connections made room: at least 40 - 8 are closed, the first one among them.
  CHECK(closed_by_peer(idle.front()));
  size_t closed = 0;
  for (const net::Fd& fd : idle) closed += closed_by_peer(fd, 100ms) ? 1 : 0;
  CHECK(closed >= 32);
}

TEST_CASE("TCPStoreServer: a burst of ranks from one address all get in, even past a tiny pending bound") {
  // 64 ranks connecting at once against max_pending_per_address = 4: ranks evicted before their HELLO was
  // read are told "busy" (or see the connection close) and retry.
  TCPStoreServerOptions o;
  o.max_pending_per_address = 4;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  constexpr int kRanks = 64;
  std::atomic<int> met{0};
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        TCPStore store("127.0.0.1", server.port(), client("tok", 60s));
        store.add("arrived", 1);
        store.set("rank/" + std::to_string(rank), "here");
        store.wait({"rank/0", "rank/" + std::to_string(kRanks - 1)});
        ++met;
      } catch (const std::exception& e) {
        MESSAGE(e.what());
      }
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(met == kRanks);
  TCPStore check("127.0.0.1", server.port(), client());
  CHECK(check.get_string("arrived") == std::to_string(kRanks));
}

TEST_CASE("TCPStoreServer: over max_connections a client is refused 'busy' and retries until a place frees") {
  TCPStoreServerOptions o;
  o.max_connections = 1;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  auto first = std::make_unique<TCPStore>("127.0.0.1", server.port(), client());
  first->set("k", "v");
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", server.port(), client("tok", 400ms)); },
                               {"did not take this client within 400 ms", "busy", "max_connections"});
  std::atomic<bool> second_ok{false};
  std::thread second([&] {
    try {
      TCPStore s("127.0.0.1", server.port(), client("tok", 20s));
      second_ok = s.get_string("k") == "v";
    } catch (const std::exception& e) {
      MESSAGE(e.what());
    }
  });
  std::this_thread::sleep_for(200ms);
  first.reset();  // frees the only place
  second.join();
  CHECK(second_ok);
}

TEST_CASE("TCPStoreServer: an idle connection that sent a byte costs no read buffer") {
  TCPStoreServerOptions o;
  o.max_pending_per_address = 2000;
  o.max_pending = 2000;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  TCPStore probe("127.0.0.1", server.port(), client());
  probe.set("warm", "up");
  const long before = resident_kib();
  constexpr int kIdle = 500;
  std::vector<net::Fd> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(connect_raw(server.port()));
    ::send(idle.back().get(), "\x20", 1, MSG_NOSIGNAL);
  }
  // Round trips after the last byte was sent: the server has read every idle connection by then.
  for (int i = 0; i < 3; ++i) probe.set("after", std::to_string(i));
  std::this_thread::sleep_for(100ms);
  probe.set("after", "done");
  const long grown = resident_kib() - before;
  MESSAGE("resident memory grew by " << grown << " KiB for " << kIdle << " idle connections");
  CHECK(grown < kIdle * 16);  // a 64 KiB read buffer each would be 32000 KiB
}

TEST_CASE("TCPStoreServer: keys, values and the total over the server's limits are refused; the connection goes on") {
  TCPStoreServerOptions o;
  o.max_key_bytes = 64;
  o.max_value_bytes = 1 << 20;
  o.max_total_bytes = 3 << 20;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  const std::string where = "127.0.0.1:" + std::to_string(server.port());
  TCPStore store("127.0.0.1", server.port(), client());
  const Bytes two_mib(2 << 20, 1);
  check_error<ValueError>([&] { store.set("big", two_mib); },
                          {"TCPStore.set('big')", "the store server at " + where + " refused it",
                           "a value of 2097152 bytes", "limit of 1048576 bytes per value",
                           "TCPStoreServerOptions::max_value_bytes", "process group"});
  store.set("small", "still served on the same connection");
  CHECK(store.get_string("small") == "still served on the same connection");
  check_error<ValueError>([&] { store.set(std::string(100, 'k'), "v"); },
                          {"a key of 100 bytes", "limit of 64 bytes per key", "max_key_bytes"});
  check_error<ValueError>([&] { store.add(std::string(65, 'k'), 1); }, {"a key of 65 bytes"});
  check_error<ValueError>([&] { store.compare_set("cas", {}, two_mib); },
                          {"compare_set('cas')", "a desired value of 2097152 bytes", "max_value_bytes"});
  // The total: three values of 900 KiB do not fit in 3 MiB with the rest.
  const Bytes part(900 << 10, 2);
  store.set("part0", part);
  store.set("part1", part);
  store.set("part2", part);
  check_error<ValueError>([&] { store.set("part3", part); },
                          {"would bring the store to", "over its limit of 3145728 bytes in total",
                           "TCPStoreServerOptions::max_total_bytes", "delete keys"});
  check_error<ValueError>([&] { store.compare_set("part4", {}, part); }, {"max_total_bytes"});
  CHECK_FALSE(store.check({"part3"}));
  store.set("part2", "x");  // replacing a value with a smaller one frees room
  store.set("part3", part);
  CHECK(store.delete_key("part0"));
  store.set("part4", part);
  CHECK(store.get("part4") == part);
}

TEST_CASE("TCPStore: an is_server store applies options.server") {
  TCPStoreOptions o = client();
  o.is_server = true;
  o.server.max_value_bytes = 1024;
  TCPStore master("127.0.0.1", 0, o);
  check_error<ValueError>([&] { master.set("k", Bytes(2048, 0)); },
                          {"a value of 2048 bytes", "limit of 1024 bytes per value"});
  master.set("k", Bytes(1024, 0));
}

TEST_CASE("TCPStoreServer: the default value limit refuses a 20 MiB value without dropping the client") {
  TCPStoreServer server("127.0.0.1", 0, "tok");
  TCPStore store("127.0.0.1", server.port(), client());
  check_error<ValueError>([&] { store.set("huge", Bytes(20 << 20, 3)); },
                          {"a value of 20971520 bytes", "16777216 bytes per value"});
  store.set("after", "fine");
  CHECK(store.get_string("after") == "fine");
}

TEST_CASE("TCPStoreServer: an oversized SET header is refused at once and its body skipped, not buffered") {
  TCPStoreServerOptions o;
  o.max_value_bytes = 1024;
  TCPStoreServer server("127.0.0.1", 0, "tok", o);
  net::Fd fd = authenticated_raw(server.port());
  // SET 'k' with a 32 MiB value: only the header and the key are sent before the answer is read.
  const uint32_t value_bytes = 32u << 20;
  Bytes head = proto::Writer(proto::Type::kSet).str(std::string("k")).u32(value_bytes).finish();
  const uint32_t n = static_cast<uint32_t>(head.size() - 4 + value_bytes);
  for (int i = 0; i < 4; ++i) head[i] = uint8_t(n >> (8 * i));
  REQUIRE(send_raw(fd, head));
  RawReply r = read_reply(fd);
  REQUIRE(r.type == int(proto::Type::kRefused));
  const std::string why(r.body.begin() + 4, r.body.end());
  CHECK(why.find("a value of 33554432 bytes") != std::string::npos);
  // The body follows and is skipped; the next request on the connection is served.
  REQUIRE(send_raw(fd, Bytes(value_bytes, 0)));
  REQUIRE(send_raw(fd, proto::Writer(proto::Type::kCheck).keys({"k"}).finish()));
  RawReply check = read_reply(fd);
  REQUIRE(check.type == int(proto::Type::kBool));
  CHECK(check.body == Bytes{0});
}

TEST_CASE("TCPStoreServer: the waiting side's timeout names the connections refused for a wrong token") {
  TCPStoreServer server("127.0.0.1", 0, "tok");
  check_error<RendezvousError>([&] { TCPStore s("127.0.0.1", server.port(), client("not-the-token")); },
                               {"refused our token", "SYNCGRAD_STORE_TOKEN"});
  TCPStore waiting("127.0.0.1", server.port(), client("tok", 300ms));
  check_error<TimeoutError>([&] { waiting.get("rank/1"); },
                            {"keys still missing: 'rank/1'",
                             "the store has refused 1 connection with a wrong token from 127.0.0.1",
                             "SYNCGRAD_STORE_TOKEN"});
  // A server that refused nobody says nothing of the kind.
  TCPStoreServer clean("127.0.0.1", 0, "tok");
  TCPStore other("127.0.0.1", clean.port(), client("tok", 200ms));
  try {
    other.wait({"never"}, 200ms);
    FAIL("expected a timeout");
  } catch (const TimeoutError& e) {
    CHECK(std::string(e.what()).find("wrong token") == std::string::npos);
  }
}

TEST_CASE("TCPStoreServer: a store beyond loopback without a token warns once; loopback or a token does not") {
  const std::string warned = stderr_of_child([] {
    TCPStoreServer a("0.0.0.0", 0, "");
    TCPStoreServer b("0.0.0.0", 0, "");
  });
  CHECK(count_of(warned, "without a token") == 1);
  CHECK(warned.find("set SYNCGRAD_STORE_TOKEN") != std::string::npos);
  CHECK(warned.find("syncgrad-launch") != std::string::npos);
  const std::string quiet = stderr_of_child([] {
    TCPStoreServer loopback("127.0.0.1", 0, "");
    TCPStoreServer with_token("0.0.0.0", 0, "secret");
  });
  CHECK(quiet.find("without a token") == std::string::npos);
}

TEST_CASE("TCPStoreServer: options over the wire limits are a ValueError") {
  TCPStoreServerOptions o;
  o.max_value_bytes = kMaxStoreValueBytes + 1;
  check_error<ValueError>([&] { TCPStoreServer s("127.0.0.1", 0, "", o); },
                          {"max_value_bytes", "kMaxStoreValueBytes"});
  o = {};
  o.max_key_bytes = 0;
  check_error<ValueError>([&] { TCPStoreServer s("127.0.0.1", 0, "", o); }, {"max_key_bytes"});
  o = {};
  o.max_pending_per_address = 0;
  check_error<ValueError>([&] { TCPStoreServer s("127.0.0.1", 0, "", o); }, {"max_pending_per_address 0"});
}

TEST_CASE("RateLimitedLog: one line per kind and interval, then the count of the lines held back") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  store_log::RateLimitedLog log("server", 10s, out);
  const auto t0 = store_log::RateLimitedLog::Clock::now();
  for (int i = 0; i < 100; ++i) log.print("accept", "Too many open files", t0 + std::chrono::milliseconds(i));
  log.print("drop", "another kind prints at once", t0);
  log.print("accept", "Too many open files", t0 + 11s);
  std::rewind(out);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, out)) text += buf;
  std::fclose(out);
  CHECK(text ==
        "server: Too many open files\n"
        "server: another kind prints at once\n"
        "server: Too many open files (99 similar lines suppressed in the last 11 s)\n");
}
