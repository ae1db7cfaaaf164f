// Joining and leaving the job's process group (see group_membership.h).
#include "tools/train/group_membership.h"

#include <cmath>

#include "distributed/init.h"
#include "distributed/launch_env.h"
#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::train {

GroupMembership::GroupMembership(const TrainConfig& c, const std::string& backend, Device device) {
  const bool launched = distributed::read_launch_env(false).world_size > 1;
  SYNCGRAD_CHECK(c.parallel != Parallelism::kDataParallel || !launched, ValueError,
                 "--parallel dp runs in one process, but WORLD_SIZE > 1 says this is one of several; run it without "
                 "syncgrad-launch, or use --parallel ddp");
  SYNCGRAD_CHECK(c.parallel != Parallelism::kNone || !launched, ValueError,
                 "--parallel none with WORLD_SIZE > 1 would train independent copies; use --parallel ddp (or auto)");
  const bool joins = c.parallel == Parallelism::kDistributed || (c.parallel == Parallelism::kAuto && launched);
  if (!joins) return;
  distributed::InitOptions options;
  options.backend = backend;
  if (device.is_cuda()) options.group.device_index = device.index;
  auto millis = [](double seconds) { return std::chrono::milliseconds(std::llround(seconds * 1000)); };
  if (c.timeout_seconds) options.timeout = millis(*c.timeout_seconds);
  if (c.rendezvous_timeout_seconds) options.store_timeout = millis(*c.rendezvous_timeout_seconds);
  group_ = distributed::init_process_group(options);
}

GroupMembership::~GroupMembership() {
  if (group_) distributed::destroy_process_group();
}

void GroupMembership::barrier() const {
  if (group_) group_->barrier()->wait();
}

}  // namespace syncgrad::train
