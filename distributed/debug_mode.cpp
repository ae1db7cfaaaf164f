// Reading SYNCGRAD_DEBUG.
#include "distributed/debug_mode.h"

#include <string>

#include "distributed/env_values.h"
#include "distributed/errors.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

DebugMode debug_mode_from_env() {
  const std::optional<std::string> value = env_values::get("SYNCGRAD_DEBUG");
  if (!value || value->empty() || *value == "off" || *value == "OFF") return DebugMode::kOff;
  if (*value == "detail" || *value == "DETAIL") return DebugMode::kDetail;
  SYNCGRAD_CHECK(false, ValueError, "SYNCGRAD_DEBUG=\"", *value,
                 "\" is not a debug mode; use \"off\" (the default) or \"detail\" (every collective's op, dtype "
                 "and shape are checked across ranks before it runs)");
  return DebugMode::kOff;
}

}  // namespace syncgrad::distributed
