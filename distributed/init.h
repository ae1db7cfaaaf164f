// The default process group, as in torch.distributed: init_process_group() joins the job described by
// init_method ("env://", "tcp://host:port", "file:///path"), destroy_process_group() leaves it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "distributed/process_group.h"

namespace syncgrad::distributed {

struct InitOptions {
  std::string backend = "gloo";        // "gloo" (CPU tensors) or "nccl" (CUDA tensors)
  std::string init_method = "env://";  // env://, tcp://host:port or file:///path
  int rank = -1;        // -1: from the environment (RANK)
  int world_size = -1;  // -1: from the environment (WORLD_SIZE)
  ProcessGroupOptions group{};  // bind address, device (and the timeout: see below)
  // How long a collective may take: this when set, else group.timeout when the program changed it from its
  // default, else $SYNCGRAD_TIMEOUT (seconds; syncgrad-launch --timeout exports it), else 600 s.
  std::optional<std::chrono::milliseconds> timeout{};
  // How long joining may take (reaching the store, waiting for the other ranks): this when set, else
  // $SYNCGRAD_RENDEZVOUS_TIMEOUT (seconds; syncgrad-launch --rendezvous-timeout), else 300 s.
  std::optional<std::chrono::milliseconds> store_timeout{};
  // Rank 0 of a job of several ranks prints one line to stderr once they have met, saying what placed them
  // and where they met: "rendezvous: slurm, job 42.0, 4 ranks on 2 nodes, master node01:20042" (the source
  // is one of syncgrad-launch, torchrun-style environment, slurm, openmpi, pmi; the nodes are counted).
  bool log_rendezvous = true;
};

// Joins the job; world size 1 needs no network. Errors (RendezvousError) name the missing variable, the
// address that could not be reached, the port in use (or the process already holding rank 0 there), a
// duplicate rank, the ranks that never arrived, or a rank of another job (its job id, SYNCGRAD_JOB_ID or
// SLURM_JOB_ID, differs from the one the first rank published in the store). Joining a group of more than
// one rank sets SIGPIPE to ignored unless the program handles it, so that a dead peer is a PeerError.
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
