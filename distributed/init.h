// The default process group, as in torch.distributed: init_process_group() joins the job described by
// init_method ("env://", "tcp://host:port", "file:///path"), destroy_process_group() leaves it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

struct InitOptions {
  std::string backend = "gloo";        // "gloo" (CPU tensors) or "nccl" (CUDA tensors)
  std::string init_method = "env://";  // env://, tcp://host:port or file:///path
  int rank = -1;        // -1: from the environment (RANK)
  int world_size = -1;  // -1: from the environment (WORLD_SIZE)
  ProcessGroupOptions group{};  // timeout, bind address, device
  std::chrono::milliseconds store_timeout = Store::kDefaultTimeout;  // rendezvous
};

// Joins the job; world size 1 needs no network. Errors (RendezvousError) name the missing variable, the
// address that could not be reached, the port in use, a duplicate rank, or the ranks that never arrived.
std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options = {});
void destroy_process_group();
bool is_initialized();
// The default group; DistributedError when init_process_group() was not called.
ProcessGroup& default_group();
std::shared_ptr<ProcessGroup> default_group_ptr();
int get_rank();        // 0 when not initialised
int get_world_size();  // 1 when not initialised
// The store of the default group (for barriers and small exchanges outside collectives).
std::shared_ptr<Store> default_store();

}  // namespace syncgrad::distributed
