// An exclusive lock on a directory, held for as long as the object lives: flock(LOCK_EX | LOCK_NB) on the file
// <dir>/.lock, into which the holder's pid, hostname and start time are written. Two runs writing checkpoints
// to one directory would overwrite each other's files; the second one is refused at start instead.
//
//   syncgrad::io::DirectoryLock lock("runs/a", "--checkpoint-dir");  // throws DirectoryInUseError if held
//
// The lock belongs to the open file, not to the file's existence: it is released when the descriptor closes,
// which the kernel does when the process exits or is killed. A .lock file left behind by a dead process is
// therefore never stale: it exists but is not locked, and the next DirectoryLock simply takes it over.
// (A process forked while holding the lock shares it until the child exits too; on NFS flock is emulated with
// fcntl locks, which work across hosts with NFSv4.)
#pragma once

#include <sys/types.h>

#include <string>

#include "tensor/errors.h"

namespace syncgrad::io {

// The directory is locked by another process; the message names the directory and the holder.
class DirectoryInUseError : public IOError {
 public:
  using IOError::IOError;
};

// Who holds (or last held) a directory's lock, as written in its .lock file; empty/0 when unreadable.
struct LockHolder {
  pid_t pid = 0;
  std::string host;
  std::string since;  // UTC, ISO 8601 ("2026-12-01T21:17:34Z")
};

class DirectoryLock {
 public:
  // Takes the lock on `dir` (which must exist). `label` names the directory in messages (e.g. the flag that
  // chose it). Throws DirectoryInUseError naming the directory and the holder when another process has it,
  // IOError when the lock file cannot be opened.
  explicit DirectoryLock(std::string dir, std::string label = "directory");
  // Clears the holder's details and releases the lock.
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

  const std::string& directory() const { return dir_; }
  const std::string& lock_file() const { return lock_path_; }

  // The name of the lock file inside a locked directory.
  static constexpr const char* kFileName = ".lock";

 private:
  std::string dir_;
  std::string lock_path_;
  int fd_ = -1;
};

// Reads the holder's details from `dir`/.lock (without locking); pid 0 when the file is missing or empty.
LockHolder read_lock_holder(const std::string& dir);

}  // namespace syncgrad::io
