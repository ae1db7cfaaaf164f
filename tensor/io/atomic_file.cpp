// AtomicFileWriter: POSIX open/write/fsync/rename with cleanup of the temporary file on every failure path.
#include "tensor/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::io {

namespace {

std::string os_reason(int error_number) { return std::system_category().message(error_number); }

std::string parent_directory(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  for (;;) {
    temp_path_ = temporary_name_for(path_);
    live_ = std::make_unique<LiveTemporary>(temp_path_);
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno == EEXIST) continue;
    if (errno == EINTR) continue;
    int error_number = errno;
    throw IOError("save '" + path_ + "': cannot create a file in '" + parent_directory(path_) +
                  "': " + os_reason(error_number) + " (does the directory exist and is it writable?)");
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
  live_.reset();
}

void AtomicFileWriter::fail(const std::string& what, int error_number) {
  discard();
  throw IOError("save '" + path_ + "': " + what + ": " + os_reason(error_number) + " (the existing file, if any, " +
                "is unchanged)");
}

void AtomicFileWriter::write(const void* data, size_t nbytes) {
  const char* bytes = static_cast<const char*>(data);
  while (nbytes > 0) {
    ssize_t written = ::write(fd_, bytes, nbytes);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    bytes += written;
    nbytes -= static_cast<size_t>(written);
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed", errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename of the temporary file failed", errno);
  temp_path_.clear();
  live_.reset();
  committed_ = true;
  // The rename is durable only once the directory entry is on disk.
  std::string directory = parent_directory(path_);
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    int error_number = errno;
    throw IOError("save '" + path_ + "': cannot open directory '" + directory + "' to fsync it: " +
                  os_reason(error_number));
  }
  int rc = ::fsync(dir_fd);
  int error_number = errno;
  ::close(dir_fd);
  SYNCGRAD_CHECK(rc == 0, IOError, "save '", path_, "': fsync of directory '", directory,
                 "' failed: ", os_reason(error_number));
}

}  // namespace syncgrad::io
