// The process group of a multi-process syncgrad-train run. --parallel ddp (or auto under syncgrad-launch, which
// sets WORLD_SIZE > 1) joins the job's group for the length of the run; --parallel none and dp train in one
// process and are refused when WORLD_SIZE says this is one of several. --timeout and --rendezvous-timeout, when
// given, override what the launcher exported (SYNCGRAD_TIMEOUT, SYNCGRAD_RENDEZVOUS_TIMEOUT).
#pragma once

#include <memory>
#include <string>

#include "distributed/process_group.h"
#include "tensor/device.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

class GroupMembership {
 public:
  // Joins over `backend` ("gloo" or "nccl"; NCCL on `device`'s GPU) when the run is multi-process.
  GroupMembership(const TrainConfig& config, const std::string& backend, Device device);
  ~GroupMembership();
  GroupMembership(const GroupMembership&) = delete;
  GroupMembership& operator=(const GroupMembership&) = delete;

  // Null for a single-process run.
  const std::shared_ptr<distributed::ProcessGroup>& group() const { return group_; }
  int rank() const { return group_ ? group_->rank() : 0; }
  int world_size() const { return group_ ? group_->size() : 1; }
  // Everyone waits here while rank 0 saves or evaluates.
  void barrier() const;

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
};

}  // namespace syncgrad::train
