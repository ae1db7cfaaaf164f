// Crash-safe file replacement: bytes go to a temporary file in the destination's directory, which is fsynced
// and renamed over the destination (then the directory is fsynced). Readers see the old file or the complete
// new one, never a half-written one; on any failure the temporary file is removed and the old file stays. The
// temporary is named by temporary_name_for (temporary_files.h) and registered as live while it is written, so
// that the clean-up after a killed process (remove_stale_temporaries) never removes it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tensor/io/temporary_files.h"

namespace syncgrad::io {

class AtomicFileWriter {
 public:
  // Creates the temporary file next to `path`; throws IOError naming the path and the OS reason.
  explicit AtomicFileWriter(std::string path);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends bytes; throws IOError (e.g. "No space left on device") after removing the temporary file.
  void write(const void* data, size_t nbytes);
  // fsync, rename over the destination, fsync the directory; throws IOError on failure.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what, int error_number);
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  std::unique_ptr<LiveTemporary> live_;  // temp_path_ while it exists
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace syncgrad::io
