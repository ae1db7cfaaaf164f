// write_all(): one logical write of a buffer, retried across short writes and signals.
#include "tools/launch/fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace syncgrad::launch {

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace syncgrad::launch
