// Internal: the TCPStoreServer's log lines on stderr, rate-limited per kind so that a flood (thousands of
// bad connections, "Too many open files" on every accept) prints one line per interval and a count of the
// lines it held back, instead of drowning the job's own output.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace syncgrad::distributed::store_log {

class RateLimitedLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDefaultInterval{10'000};

  // Lines are written to `out` as "<prefix>: <line>".
  explicit RateLimitedLog(std::string prefix, std::chrono::milliseconds interval = kDefaultInterval,
                          std::FILE* out = stderr);

  // Prints the line unless a line of the same kind was printed less than an interval ago (then counts it).
  // A printed line ends with "(N similar lines suppressed in the last S s)" when some were held back.
  void print(const std::string& kind, const std::string& line, Clock::time_point now = Clock::now());

 private:
  struct Kind {
    Clock::time_point last_printed;
    size_t suppressed = 0;
  };
  std::string prefix_;
  std::chrono::milliseconds interval_;
  std::FILE* out_;
  std::map<std::string, Kind> kinds_;
};

}  // namespace syncgrad::distributed::store_log
