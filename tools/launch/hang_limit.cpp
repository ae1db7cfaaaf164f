// The hang limit of syncgrad-launch's rank heartbeat watch (see hang_limit.h).
#include "tools/launch/hang_limit.h"

#include <cstdlib>
#include <optional>

#include "distributed/launch_env.h"

namespace syncgrad::launch {
namespace {

constexpr std::chrono::milliseconds kDefaultCollectiveTimeout{600'000};
constexpr std::chrono::milliseconds kMargin{5'000};

}  // namespace

std::chrono::milliseconds hang_limit(const LaunchOptions& options) {
  std::optional<std::chrono::milliseconds> timeout;
  if (options.timeout) timeout = distributed::parse_timeout_seconds(*options.timeout);
  const char* from_env = std::getenv("SYNCGRAD_TIMEOUT");
  if (!timeout && from_env != nullptr) timeout = distributed::parse_timeout_seconds(from_env);
  return timeout.value_or(kDefaultCollectiveTimeout) + kMargin;
}

}  // namespace syncgrad::launch
