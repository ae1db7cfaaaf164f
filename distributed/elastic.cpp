// SYNCGRAD_ELASTIC and the refusal of another world size (see elastic.h).
#include "distributed/elastic.h"

#include <cstdlib>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::distributed {

bool elastic_requested_by_environment() {
  const char* value = std::getenv(kElasticEnvironmentVariable);
  const std::string text = value == nullptr ? "" : value;
  if (text.empty() || text == "0") return false;
  if (text == "1") return true;
  throw ValueError(std::string(kElasticEnvironmentVariable) + "=\"" + text + "\" is neither 1 (allow resuming a " +
                   "checkpoint at another world size) nor 0 (refuse it); set it to 1 or 0, or unset it");
}

void check_world_size_change(int64_t saved_world, int64_t world, bool allowed, const std::string& what,
                             const std::string& how_to_allow) {
  SYNCGRAD_CHECK(saved_world == world || allowed, ValueError, what, " was saved by a job of world size ", saved_world,
                 " but this one has ", world, "; resume with ", saved_world, " processes, or ", how_to_allow,
                 " to continue at world size ", world,
                 " (the epoch's remaining samples are split among the new ranks)");
}

}  // namespace syncgrad::distributed
