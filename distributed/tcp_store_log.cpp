// Rate-limited log lines of the TCPStoreServer (tcp_store_log.h).
#include "distributed/tcp_store_log.h"

#include <utility>

namespace syncgrad::distributed::store_log {

RateLimitedLog::RateLimitedLog(std::string prefix, std::chrono::milliseconds interval, std::FILE* out)
    : prefix_(std::move(prefix)), interval_(interval), out_(out) {}

void RateLimitedLog::print(const std::string& kind, const std::string& line, Clock::time_point now) {
  auto [it, first] = kinds_.try_emplace(kind);
  Kind& k = it->second;
  if (!first && now - k.last_printed < interval_) {
    ++k.suppressed;
    return;
  }
  std::string text = prefix_ + ": " + line;
  if (k.suppressed > 0) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - k.last_printed).count();
    text += " (" + std::to_string(k.suppressed) + " similar line" + (k.suppressed == 1 ? "" : "s") +
            " suppressed in the last " + std::to_string(seconds) + " s)";
  }
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
  k.last_printed = now;
  k.suppressed = 0;
}

}  // namespace syncgrad::distributed::store_log
