// A small fuzzer for the TCPStore server: against a live server, random bytes, random and mutated frames,
// truncated frames, huge length prefixes, bad HELLOs, pipelined valid requests and connection floods, for a
// bounded number of iterations (and at most a few seconds); meanwhile a real client stays parked in get() and
// a real client checks a round trip now and then. At the end the server must still serve a real client
// correctly. Deterministic per seed: SYNCGRAD_STORE_FUZZ_SEED and SYNCGRAD_STORE_FUZZ_ITERATIONS override
// the defaults. Binds 127.0.0.1 on an ephemeral port.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/tcp_store.h"
#include "tests/distributed/store_raw_client.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace syncgrad::test::store_raw;
using namespace std::chrono_literals;

namespace {

constexpr const char* kToken = "fuzz-token";
constexpr std::chrono::seconds kTimeBudget{8};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

class Fuzzer {
 public:
  Fuzzer(uint16_t port, uint64_t seed) : port_(port), rng_(seed) {}

  void iteration() {
    switch (pick(9)) {
      case 0: random_bytes(); break;
      case 1: random_frame(); break;
      case 2: mutated_request(); break;
      case 3: truncated_request(); break;
      case 4: huge_length(); break;
      case 5: bad_hello(); break;
      case 6: flood(); break;
      case 7: pipelined_valid(); break;
      default: oversized_value(); break;
    }
  }

  size_t bad_replies() const { return bad_replies_; }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  uint8_t byte() { return static_cast<uint8_t>(pick(256)); }

  Bytes random_bytes(size_t max) {
    Bytes b(pick(max + 1));
    for (auto& x : b) x = byte();
    return b;
  }

  std::string key() { return "fz/" + std::to_string(pick(16)); }

  // A well-formed request of a random type (timeouts short so that parked requests end quickly).
  Bytes valid_request() {
    switch (pick(7)) {
      case 0: return proto::Writer(proto::Type::kSet).str(key()).str(random_bytes(64)).finish();
      case 1: return proto::Writer(proto::Type::kGet).str(key()).i64(int64_t(pick(30))).finish();
      case 2: return proto::Writer(proto::Type::kAdd).str(key()).i64(int64_t(pick(7)) - 3).finish();
      case 3: return proto::Writer(proto::Type::kCompareSet).str(key()).str(random_bytes(4)).str(random_bytes(8)).finish();
      case 4: return proto::Writer(proto::Type::kCheck).keys({key(), key()}).finish();
      case 5: return proto::Writer(proto::Type::kDelete).str(key()).finish();
      default: return proto::Writer(proto::Type::kWait).keys({key()}).i64(int64_t(pick(30))).finish();
    }
  }

  net::Fd open(bool authenticate) {
    net::Fd fd = connect_raw(port_);
    if (fd.valid() && authenticate) send_raw(fd, hello_frame(kToken));
    return fd;
  }

  // Either closes at once or reads (and discards) whatever comes back for a moment.
  void finish(net::Fd& fd) {
    if (pick(2) == 0) return;
    uint8_t sink[4096];
    const auto until = Clock::now() + 20ms;
    while (Clock::now() < until) {
      pollfd p{fd.get(), POLLIN, 0};
      if (::poll(&p, 1, 5) <= 0) continue;
      if (::recv(fd.get(), sink, sizeof sink, MSG_DONTWAIT) <= 0) return;
    }
  }

  void random_bytes() {
    net::Fd fd = open(pick(2) == 0);
    send_raw(fd, random_bytes(96));
    finish(fd);
  }

  void random_frame() {
    net::Fd fd = open(true);
    const Bytes body = random_bytes(64);
    Bytes frame(proto::kHeaderBytes + body.size());
    const auto n = static_cast<uint32_t>(1 + body.size());
    for (int i = 0; i < 4; ++i) frame[size_t(i)] = uint8_t(n >> (8 * i));
    frame[4] = byte();
    std::copy(body.begin(), body.end(), frame.begin() + proto::kHeaderBytes);
    send_raw(fd, frame);
    finish(fd);
  }

  void mutated_request() {
    net::Fd fd = open(true);
    Bytes frame = valid_request();
    const size_t flips = 1 + pick(4);
    for (size_t i = 0; i < flips; ++i) frame[pick(frame.size())] = byte();
    if (pick(3) == 0) frame.resize(pick(frame.size() + 16), byte());
    send_raw(fd, frame);
    finish(fd);
  }

  void truncated_request() {
    net::Fd fd = open(pick(4) != 0);
    Bytes frame = pick(3) == 0 ? hello_frame(kToken) : valid_request();
    frame.resize(pick(frame.size()));
    send_raw(fd, frame);
  }

  void huge_length() {
    net::Fd fd = open(pick(3) != 0);
    const uint32_t n = pick(2) == 0 ? 0xffffffffu - uint32_t(pick(1000)) : (1u << 24) + uint32_t(pick(1u << 30));
    Bytes head{uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24), uint8_t(1 + pick(8))};
    send_raw(fd, head);
    Bytes tail = random_bytes(32);
    send_raw(fd, tail);
    finish(fd);
  }

  void bad_hello() {
    net::Fd fd = open(false);
    const uint32_t magic = pick(2) == 0 ? proto::kMagic : uint32_t(rng_());
    const uint32_t version = pick(2) == 0 ? proto::kVersion : uint32_t(pick(5));
    std::string token = pick(2) == 0 ? std::string(kToken) : std::string(pick(20), char('a' + pick(26)));
    send_raw(fd, proto::Writer(proto::Type::kHello).u32(magic).u32(version).str(token).finish());
    finish(fd);
  }

  void flood() {
    std::vector<net::Fd> many;
    for (int i = 0; i < 20; ++i) many.push_back(open(pick(4) == 0));
  }

  void pipelined_valid() {
    net::Fd fd = open(true);
    if (read_reply(fd, 2s).type != int(proto::Type::kHelloOk)) {
      ++bad_replies_;
      return;
    }
    const size_t count = 1 + pick(6);
    Bytes batch;
    for (size_t i = 0; i < count; ++i) {
      Bytes r = valid_request();
      batch.insert(batch.end(), r.begin(), r.end());
    }
    send_raw(fd, batch);
    for (size_t i = 0; i < count; ++i) {
      const int type = read_reply(fd, 5s).type;
      const bool reply_type = type >= int(proto::Type::kOk) && type <= int(proto::Type::kRefused);
      if (!reply_type) ++bad_replies_;
    }
  }

  // A SET over the server's value limit: refused, and the rest of the body may never come.
  void oversized_value() {
    net::Fd fd = open(true);
    const uint32_t value = (16u << 20) + uint32_t(pick(1u << 20)) + 1;
    Bytes head = proto::Writer(proto::Type::kSet).str(key()).u32(value).finish();
    const auto n = static_cast<uint32_t>(head.size() - 4 + value);
    for (int i = 0; i < 4; ++i) head[size_t(i)] = uint8_t(n >> (8 * i));
    send_raw(fd, head);
    send_raw(fd, random_bytes(4096));
    finish(fd);
  }

  uint16_t port_;
  std::mt19937_64 rng_;
  size_t bad_replies_ = 0;
};

TCPStoreOptions real_client(std::chrono::milliseconds timeout = 20s) {
  TCPStoreOptions o;
  o.token = kToken;
  o.timeout = timeout;
  return o;
}

}  // namespace

TEST_CASE("TCPStore fuzz: random, truncated, huge and flooding input never stops the server serving") {
  const uint64_t seed = env_or("SYNCGRAD_STORE_FUZZ_SEED", 19);
  const uint64_t iterations = env_or("SYNCGRAD_STORE_FUZZ_ITERATIONS", 1500);
  MESSAGE("seed " << seed << ", at most " << iterations << " iterations");
  TCPStoreServerOptions o;
  o.handshake_timeout = 500ms;  // fuzz connections left idle go away quickly
  TCPStoreServer server("127.0.0.1", 0, kToken, o);
  std::atomic<bool> waiter_ok{false};
  std::thread waiter([&] {
    try {
      TCPStore w("127.0.0.1", server.port(), real_client(60s));
      waiter_ok = w.get_string("release") == "released";
    } catch (const std::exception& e) {
      MESSAGE(e.what());
    }
  });
  TCPStore real("127.0.0.1", server.port(), real_client());
  Fuzzer fuzzer(server.port(), seed);
  const auto stop_at = Clock::now() + kTimeBudget;
  uint64_t done = 0;
  for (; done < iterations && Clock::now() < stop_at; ++done) {
    fuzzer.iteration();
    if (done % 100 == 0) {
      const std::string value = "round " + std::to_string(done);
      real.set("real/check", value);
      CHECK(real.get_string("real/check") == value);
    }
  }
  MESSAGE(done << " iterations");
  CHECK(fuzzer.bad_replies() == 0);
  // Still serving a fresh client correctly, and the parked one is released.
  TCPStore fresh("127.0.0.1", server.port(), real_client());
  fresh.set("after", "fuzz");
  CHECK(fresh.get_string("after") == "fuzz");
  CHECK(fresh.add("after/count", 3) == 3);
  fresh.wait({"after", "after/count"});
  fresh.set("release", "released");
  waiter.join();
  CHECK(waiter_ok);
}
