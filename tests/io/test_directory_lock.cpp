// DirectoryLock: a second lock on a held directory is refused naming the holder's pid and host; the lock is free
// again once the holder is gone; a .lock file left by a dead process (not flocked) is taken over; a missing
// directory is an IOError naming it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>
#include <optional>

#include "tensor/io/directory_lock.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::contains;
using syncgrad::testing::message_of;
using syncgrad::testing::TempDir;

namespace {

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

TEST_CASE("DirectoryLock: a held directory is refused, naming the directory and the holder") {
  TempDir dir;
  std::optional<io::DirectoryLock> first;
  first.emplace(dir.path(), "--checkpoint-dir");
  io::LockHolder holder = io::read_lock_holder(dir.path());
  CHECK(holder.pid == ::getpid());
  CHECK(holder.host == this_host());
  CHECK(!holder.since.empty());

  std::string message =
      message_of<io::DirectoryInUseError>([&] { io::DirectoryLock second(dir.path(), "--checkpoint-dir"); });
  CHECK(contains(message, "--checkpoint-dir " + dir.path() + " is in use by another run"));
  CHECK(contains(message, "pid " + std::to_string(::getpid())));
  CHECK(contains(message, "on host " + this_host()));
  CHECK(contains(message, "since " + holder.since));
  CHECK(contains(message, "pick another directory"));
  // Still an IOError, for callers that handle file-system failures as one.
  CHECK_THROWS_AS(io::DirectoryLock(dir.path()), IOError);

  first.reset();
  CHECK(io::read_lock_holder(dir.path()).pid == 0);  // released: the details are cleared
  io::DirectoryLock third(dir.path());
  CHECK(io::read_lock_holder(dir.path()).pid == ::getpid());
}

TEST_CASE("DirectoryLock: a lock file left by a dead process is taken over") {
  TempDir dir;
  {
    std::ofstream stale(dir.file(io::DirectoryLock::kFileName));
    stale << "pid 999999999\nhost ghost\nsince 2000-01-01T00:00:00Z\n";
  }
  CHECK(io::read_lock_holder(dir.path()).pid == 999999999);
  io::DirectoryLock lock(dir.path());
  io::LockHolder holder = io::read_lock_holder(dir.path());
  CHECK(holder.pid == ::getpid());
  CHECK(holder.host == this_host());
  CHECK(holder.since != "2000-01-01T00:00:00Z");
  CHECK(lock.lock_file() == dir.file(".lock"));
}

TEST_CASE("DirectoryLock: a missing directory is an IOError naming it") {
  TempDir dir;
  std::string missing = dir.file("no-such-dir");
  std::string message = message_of<IOError>([&] { io::DirectoryLock lock(missing, "--checkpoint-dir"); });
  CHECK(contains(message, missing));
  CHECK(contains(message, "does the directory exist"));
}
