// Small POSIX I/O helpers: writing a whole buffer despite short writes and EINTR.
#pragma once

#include <string_view>

namespace syncgrad::launch {

// Writes all of `data` to fd; false when the reader is gone (EPIPE) or the write fails otherwise.
bool write_all(int fd, std::string_view data);

}  // namespace syncgrad::launch
