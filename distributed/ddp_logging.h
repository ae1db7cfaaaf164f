// DDPLoggingData: what a DistributedDataParallel is set up with and how its last steps went, in one struct
// (DistributedDataParallel::logging_data(); PyTorch's DDP _get_ddp_logging_data()): the world and backend, the
// bucket plan in bytes and parameters, whether the buckets were rebuilt in gradient-ready order, the unused
// parameters found, the comm hook, and averages over the last synchronised steps of forward, backward compute,
// communication and its exposed part, with the share of the communication hidden behind backward. Every
// rank has its own (timings and unused parameters are this rank's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace syncgrad::distributed {

struct DDPLoggingData {
  int world_size = 0;
  int rank = 0;
  std::string backend;      // the process group's: "gloo", "nccl"
  std::string module_name;  // the wrapped module's type, e.g. "CNN"
  // The options.
  double bucket_cap_mb = 0;
  double first_bucket_mb = 0;
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
  bool broadcast_buffers = false;
  bool overlap = false;
  std::string comm_hook;  // "allreduce", "fp16_compress", "powersgd", ...
  // The parameters and the buckets (launch order).
  int64_t num_parameter_tensors = 0;  // that require grad
  int64_t total_parameter_bytes = 0;
  std::vector<size_t> bucket_sizes_bytes;
  std::vector<size_t> bucket_parameter_counts;  // parameter tensors per bucket
  bool buckets_rebuilt = false;  // rebuilt in gradient-ready order after the first backward (world > 1, > 1 bucket)
  // Parameters that got no gradient on this rank in the last synchronised backward (names); only non-empty with
  // find_unused_parameters (without it such a parameter is an error).
  std::vector<std::string> unused_parameters;
  // The steps.
  int64_t iterations = 0;       // synchronised backward passes
  int64_t averaged_steps = 0;   // how many of the last synchronised steps the averages cover (at most 20)
  int64_t averaged_forwards = 0;   // training forwards the forward average covers (at most 20)
  double avg_forward_seconds = 0;           // a training forward through the wrapper
  double avg_backward_compute_seconds = 0;  // first gradient to the end of the autograd pass
  double avg_comm_seconds = 0;              // the buckets' reductions, summed
  double avg_exposed_comm_seconds = 0;      // what the end of backward waited for (reductions, the step check)
  double comm_overlap_ratio = 0;            // 1 - exposed / comm, in [0, 1]: the share of comm hidden
};

// "key: value" lines, one per field, for people (syncgrad-train --ddp-logging-data prints them).
std::string to_string(const DDPLoggingData& data);

}  // namespace syncgrad::distributed
