// DirectoryLock: open <dir>/.lock, flock it without waiting, write the holder's details into it.
#include "tensor/io/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>

#include "tensor/errors.h"

namespace syncgrad::io {
namespace {

std::string os_reason(int error_number) { return std::system_category().message(error_number); }

std::string lock_path_in(const std::string& dir) {
  return dir.empty() || dir.back() == '/' ? dir + DirectoryLock::kFileName : dir + "/" + DirectoryLock::kFileName;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// "pid 123\nhost h\nsince 2026-12-01T21:17:34Z\n"
std::string holder_record() {
  return "pid " + std::to_string(::getpid()) + "\nhost " + host_name() + "\nsince " + utc_now() + "\n";
}

LockHolder parse_holder(std::istream& in) {
  LockHolder holder;
  std::string key;
  while (in >> key) {
    if (key == "pid") {
      long pid = 0;
      if (in >> pid) holder.pid = static_cast<pid_t>(pid);
    } else if (key == "host") {
      in >> holder.host;
    } else if (key == "since") {
      in >> holder.since;
    }
  }
  return holder;
}

// The holder may have just taken the lock and not yet written its details: look again for a moment.
LockHolder wait_for_holder(const std::string& dir) {
  LockHolder holder = read_lock_holder(dir);
  for (int attempt = 0; holder.pid == 0 && attempt < 20; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    holder = read_lock_holder(dir);
  }
  return holder;
}

std::string describe(const LockHolder& holder) {
  if (holder.pid == 0) return "holder unknown";
  std::string text = "pid " + std::to_string(holder.pid);
  if (!holder.host.empty()) text += " on host " + holder.host;
  if (!holder.since.empty()) text += ", since " + holder.since;
  return text;
}

}  // namespace

LockHolder read_lock_holder(const std::string& dir) {
  std::ifstream in(lock_path_in(dir));
  if (!in) return {};
  return parse_holder(in);
}

DirectoryLock::DirectoryLock(std::string dir, std::string label)
    : dir_(std::move(dir)), lock_path_(lock_path_in(dir_)) {
  // No O_TRUNC: the file may be another process's, whose details the refusal below reports.
  do {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    int error_number = errno;
    throw IOError(label + " " + dir_ + ": cannot open the lock file '" + lock_path_ + "': " +
                  os_reason(error_number) + " (does the directory exist and is it writable?)");
  }
  int status;
  do {
    status = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (status != 0 && errno == EINTR);
  if (status != 0) {
    int error_number = errno;
    ::close(fd_);
    fd_ = -1;
    if (error_number == EWOULDBLOCK) {
      throw DirectoryInUseError(label + " " + dir_ + " is in use by another run (" +
                                describe(wait_for_holder(dir_)) + "); wait for it, or pick another directory");
    }
    throw IOError(label + " " + dir_ + ": cannot lock '" + lock_path_ + "': " + os_reason(error_number));
  }
  // Ours now (a file left by a dead process is taken over here): replace whatever it said with our details.
  std::string record = holder_record();
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    int error_number = errno;
    ::close(fd_);
    fd_ = -1;
    throw IOError(label + " " + dir_ + ": cannot write the lock file '" + lock_path_ + "': " +
                  os_reason(error_number));
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ < 0) return;
  // Cleared while still locked, so that no new holder's details are wiped; the file stays (removing it would let
  // a process that opened it just before take a lock on an unlinked file while a third locks a new one).
  [[maybe_unused]] int cleared = ::ftruncate(fd_, 0);  // failing leaves stale details only: they are informative
  ::close(fd_);
}

}  // namespace syncgrad::io
