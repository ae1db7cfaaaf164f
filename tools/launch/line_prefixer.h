// LinePrefixer: cuts one rank's output stream into lines and hands each complete line, prefixed with
// "[rankN]: ", to a sink -- so that two ranks never share a line however their writes are split.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace syncgrad::launch {

class LinePrefixer {
 public:
  using Sink = std::function<void(std::string_view)>;
  // A partial line longer than max_line bytes is passed on (with a newline) rather than held forever.
  static constexpr size_t kDefaultMaxLine = 1 << 20;

  LinePrefixer(std::string prefix, Sink sink, size_t max_line = kDefaultMaxLine);

  // Passes on every line that `data` completes, all in one sink call; keeps the rest.
  void feed(std::string_view data);
  // End of stream: passes on a last line without a trailing newline, adding one.
  void finish();

 private:
  std::string prefix_;
  Sink sink_;
  size_t max_line_;
  std::string partial_;
};

}  // namespace syncgrad::launch
