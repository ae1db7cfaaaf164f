// The temporaries that crash-safe writes create beside their destination ("<path>.tmp.<pid>.<n>": a file of
// AtomicFileWriter, a directory of a checkpoint save), and the process-wide set of those being written right
// now. A process killed mid-write leaves its temporary behind; a writer that holds the directory's lock (so no
// other process writes there) removes every temporary that no writer of its own holds:
//
//   io::DirectoryLock lock(dir, "--checkpoint-dir");
//   io::remove_stale_temporaries(lock);  // the debris of a killed save: certainly not in use
#pragma once

#include <string>
#include <vector>

#include "tensor/io/directory_lock.h"

namespace syncgrad::io {

// "<path>.tmp.<pid>.<n>", unique within this process (n counts up).
std::string temporary_name_for(const std::string& path);

// Whether a file name (no directory) has the form temporary_name_for gives.
bool is_temporary_name(const std::string& file_name);

// Registers `path` as being written by this process while the object lives.
class LiveTemporary {
 public:
  explicit LiveTemporary(std::string path);
  ~LiveTemporary();
  LiveTemporary(const LiveTemporary&) = delete;
  LiveTemporary& operator=(const LiveTemporary&) = delete;

 private:
  std::string key_;
};

bool is_live_temporary(const std::string& path);

// Removes (recursively) every temporary directly inside the locked directory that no LiveTemporary of this
// process holds; returns the removed names. IOError naming the path when one cannot be removed.
std::vector<std::string> remove_stale_temporaries(const DirectoryLock& lock);

}  // namespace syncgrad::io
