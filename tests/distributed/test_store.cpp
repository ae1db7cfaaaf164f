// Store semantics every implementation shares (HashStore, PrefixStore, FileStore, TCPStore, PrefixStore over a
// TCPStore): set/get, decimal counters, compare_set, check, delete_key, wait, timeouts naming the missing keys,
// waking a waiter from another thread; then what is specific to HashStore, PrefixStore and FileStore.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/file_store.h"
#include "distributed/hash_store.h"
#include "distributed/tcp_store.h"
#include "tests/check_error.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using namespace std::chrono_literals;
using syncgrad::testing::check_error;

namespace {

std::string temp_dir() {
  std::string pattern = (getenv("TMPDIR") ? std::string(getenv("TMPDIR")) : std::string("/tmp")) + "/sgstore-XXXXXX";
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// One store under test plus whatever keeps it alive.
struct Fixture {
  std::string name;
  std::shared_ptr<Store> store;
  // A second handle on the same data (another client / object), for cross-thread tests.
  std::function<std::shared_ptr<Store>()> another;
  // Where timeouts are set: the store itself, or the store under a PrefixStore (whose timeout it follows).
  Store* timeouts = nullptr;
  Store& timeout_owner() { return timeouts ? *timeouts : *store; }
};

std::vector<std::function<Fixture()>> fixtures() {
  return {
      [] {
        auto s = std::make_shared<HashStore>();
        return Fixture{"HashStore", s, [s] { return s; }};
      },
      [] {
        auto base = std::make_shared<HashStore>();
        auto s = std::make_shared<PrefixStore>("job", base);
        return Fixture{"PrefixStore(HashStore)", s, [base] { return std::make_shared<PrefixStore>("job", base); },
                       base.get()};
      },
      [] {
        const std::string dir = temp_dir();
        const std::string path = dir + "/store";
        // World size 0: the file goes when its last user does (handles come and go during the tests).
        auto s = std::make_shared<FileStore>(path, 0);
        return Fixture{"FileStore", s, [path] { return std::make_shared<FileStore>(path, 0); }};
      },
      [] {
        TCPStoreOptions o;
        o.is_server = true;
        o.timeout = 5s;
        o.token = "tok";
        auto s = std::make_shared<TCPStore>("127.0.0.1", 0, o);
        const uint16_t port = s->port();
        return Fixture{"TCPStore", s, [port] {
                         TCPStoreOptions c;
                         c.timeout = 5s;
                         c.token = "tok";
                         return std::make_shared<TCPStore>("127.0.0.1", port, c);
                       }};
      },
      [] {
        TCPStoreOptions o;
        o.is_server = true;
        o.timeout = 5s;
        auto tcp = std::make_shared<TCPStore>("127.0.0.1", 0, o);
        auto s = std::make_shared<PrefixStore>("pg0", tcp);
        return Fixture{"PrefixStore(TCPStore)", s, [tcp] { return std::make_shared<PrefixStore>("pg0", tcp); },
                       tcp.get()};
      },
  };
}

}  // namespace

TEST_CASE("stores: set, get, overwrite and binary values") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    Store& s = *f.store;
    s.set("a", "1");
    CHECK(s.get_string("a") == "1");
    s.set("a", "two");
    CHECK(s.get_string("a") == "two");
    const Bytes binary{0, 1, 2, 0, 255};
    s.set("bin", binary);
    CHECK(s.get("bin") == binary);
    s.set("empty", Bytes{});
    CHECK(s.get("empty").empty());
    CHECK(s.check({"empty"}));
  }
}

TEST_CASE("stores: add keeps a decimal counter") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    Store& s = *f.store;
    CHECK(s.add("n", 1) == 1);
    CHECK(s.add("n", 2) == 3);
    CHECK(s.get_string("n") == "3");
    CHECK(s.add("n", -5) == -2);
    CHECK(s.get_string("n") == "-2");
    CHECK(s.add("n", 0) == -2);
    s.set("m", "41");
    CHECK(s.add("m", 1) == 42);
    s.set("text", "abc");
    check_error<ValueError>([&] { s.add("text", 1); }, {"add(", "text", "not a decimal integer"});
    CHECK(s.get_string("text") == "abc");
    s.set("big", std::to_string(INT64_MAX));
    check_error<ValueError>([&] { s.add("big", 1); }, {"overflow"});
  }
}

TEST_CASE("stores: compare_set (an absent key matches an empty expected value)") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    Store& s = *f.store;
    // Absent key, non-empty expected: nothing happens, the result is empty and the key stays absent.
    CHECK(s.compare_set("k", to_bytes("x"), to_bytes("y")).empty());
    CHECK_FALSE(s.check({"k"}));
    // Absent key, empty expected: the desired value is stored.
    CHECK(to_string(s.compare_set("k", {}, to_bytes("first"))) == "first");
    CHECK(s.get_string("k") == "first");
    // Present key, wrong expected: unchanged, the current value is returned.
    CHECK(to_string(s.compare_set("k", to_bytes("nope"), to_bytes("second"))) == "first");
    CHECK(to_string(s.compare_set("k", {}, to_bytes("second"))) == "first");
    // Present key, right expected: swapped.
    CHECK(to_string(s.compare_set("k", to_bytes("first"), to_bytes("second"))) == "second");
    CHECK(s.get_string("k") == "second");
  }
}

TEST_CASE("stores: check, delete_key and wait") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    Store& s = *f.store;
    CHECK(s.check({}));
    CHECK_FALSE(s.check({"x"}));
    s.set("x", "1");
    s.set("y", "2");
    CHECK(s.check({"x", "y"}));
    CHECK_FALSE(s.check({"x", "z"}));
    s.wait({"x", "y"}, 100ms);
    s.wait({"x"});
    CHECK(s.delete_key("x"));
    CHECK_FALSE(s.delete_key("x"));
    CHECK_FALSE(s.check({"x"}));
    CHECK(s.check({"y"}));
  }
}

TEST_CASE("stores: get and wait time out naming the missing keys") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    Store& s = *f.store;
    s.set("present", "1");
    const auto start = std::chrono::steady_clock::now();
    check_error<TimeoutError>(
        [&] {
          s.wait({"present", "absent1", "absent2"}, 150ms);
        },
        {"wait", "timed out after 150 ms", "absent1', '", "absent2'"});
    try {
      s.wait({"present", "absent1"}, 50ms);
    } catch (const TimeoutError& e) {
      CHECK(std::string(e.what()).find("'present'") == std::string::npos);
    }
    f.timeout_owner().set_timeout(120ms);
    check_error<TimeoutError>([&] { s.get("missing"); }, {"get(", "missing", "timed out after 120 ms"});
    CHECK(std::chrono::steady_clock::now() - start < 10s);
  }
}

TEST_CASE("stores: a waiter is woken when another thread sets the key") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    auto other = f.another();
    std::thread setter([&] {
      std::this_thread::sleep_for(100ms);
      other->set("late", "value");
      other->add("late_counter", 7);
    });
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.store->get_string("late") == "value");
    f.store->wait({"late", "late_counter"}, 5s);
    CHECK(f.store->get_string("late_counter") == "7");
    setter.join();
    CHECK(std::chrono::steady_clock::now() - start < 5s);
  }
}

TEST_CASE("stores: concurrent add from several threads loses no increment") {
  for (auto& make : fixtures()) {
    Fixture f = make();
    CAPTURE(f.name);
    constexpr int kThreads = 4;
    constexpr int kAdds = 25;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        auto handle = f.another();
        for (int i = 0; i < kAdds; ++i) handle->add("counter", 1);
      });
    }
    for (auto& t : threads) t.join();
    CHECK(f.store->get_string("counter") == std::to_string(kThreads * kAdds));
  }
}

TEST_CASE("PrefixStore: keys live under <prefix>/ and prefixes do not collide") {
  auto base = std::make_shared<HashStore>();
  PrefixStore a("a", base);
  PrefixStore b("b", base);
  a.set("k", "from a");
  b.set("k", "from b");
  CHECK(base->get_string("a/k") == "from a");
  CHECK(base->get_string("b/k") == "from b");
  CHECK(a.add("n", 2) == 2);
  CHECK(base->get_string("a/n") == "2");
  CHECK_FALSE(b.check({"n"}));
  CHECK(a.check({"k", "n"}));
  CHECK(b.delete_key("k"));
  CHECK(base->check({"a/k"}));
  CHECK_FALSE(base->check({"b/k"}));
  CHECK(a.underlying() == base);
  // Nested prefixes compose.
  auto inner = std::make_shared<PrefixStore>("outer", base);
  PrefixStore nested("inner", inner);
  nested.set("x", "1");
  CHECK(base->get_string("outer/inner/x") == "1");
  check_error<ValueError>([] { PrefixStore p("p", nullptr); }, {"PrefixStore", "null"});
}

TEST_CASE("PrefixStore: the timeout follows the underlying store") {
  auto base = std::make_shared<HashStore>(80ms);
  PrefixStore p("pre", base);
  CHECK(p.timeout() == 80ms);
  check_error<TimeoutError>([&] { p.get("k"); }, {"pre/k", "80 ms"});
  check_error<TimeoutError>([&] { p.wait({"k"}); }, {"pre/k", "80 ms"});
}

TEST_CASE("FileStore: a missing directory is an IOError naming the path") {
  const std::string path = temp_dir() + "/no/such/dir/store";
  check_error<IOError>([&] { FileStore s(path, 1); }, {path, "No such file or directory", "directory does not exist"});
}

TEST_CASE("FileStore: two objects share the file; the last of world_size users removes it") {
  const std::string path = temp_dir() + "/store";
  {
    auto first = std::make_unique<FileStore>(path, 2, 2s);
    FileStore second(path, 2, 2s);
    CHECK(first->path() == path);
    first->set("k", "v");
    CHECK(second.get_string("k") == "v");
    CHECK(second.add("c", 5) == 5);
    CHECK(first->add("c", 1) == 6);
    CHECK(first->delete_key("k"));
    CHECK_FALSE(second.check({"k"}));
    first.reset();
    CHECK(file_exists(path));  // one of two users finished
    CHECK(second.get_string("c") == "6");
  }
  CHECK_FALSE(file_exists(path));
}

TEST_CASE("FileStore: a torn record at the end of the log is cut off") {
  const std::string path = temp_dir() + "/store";
  FileStore s(path, 1, 1s);
  s.set("good", "1");
  {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write("S\x05\x00\x00\x00tor", 8);  // a set record that stops inside its key
  }
  CHECK(s.get_string("good") == "1");
  s.set("after", "2");
  CHECK(s.get_string("after") == "2");
  CHECK(s.check({"good", "after"}));
}
