// SYNCGRAD_DEBUG: how much the process groups check (torch.distributed's TORCH_DISTRIBUTED_DEBUG, narrowed to
// what syncgrad does). "off" (default, also unset or empty): the always-on checks only -- the flight recorder,
// DDP's step and bucket-plan agreement, the settings agreement. "detail": in addition, before every collective the
// ranks exchange its fingerprint (op, dtype, shape, argument, caller) and a mismatch is a DesyncError naming both
// ranks' calls (collective_fingerprint.h): one small extra exchange per collective.
#pragma once

namespace syncgrad::distributed {

enum class DebugMode { kOff, kDetail };

// SYNCGRAD_DEBUG read now; ValueError naming the variable, its value and the accepted ones otherwise.
DebugMode debug_mode_from_env();

}  // namespace syncgrad::distributed
