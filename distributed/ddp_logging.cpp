// DDPLoggingData as text (see ddp_logging.h).
#include "distributed/ddp_logging.h"

#include <cstdio>
#include <type_traits>

namespace syncgrad::distributed {
namespace {

template <typename T>
std::string list(const std::vector<T>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_arithmetic_v<T>) {
      text += (i ? ", " : "") + std::to_string(values[i]);
    } else {
      text += (i ? ", " : "") + values[i];
    }
  }
  return text + "]";
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", 1e3 * seconds);
  return text;
}

}  // namespace

std::string to_string(const DDPLoggingData& d) {
  const auto yes = [](bool b) { return std::string(b ? "true" : "false"); };
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", d.comm_overlap_ratio);
  std::string text;
  const auto line = [&text](const std::string& key, const std::string& value) { text += key + ": " + value + "\n"; };
  line("world_size", std::to_string(d.world_size));
  line("rank", std::to_string(d.rank));
  line("backend", d.backend);
  line("module_name", d.module_name);
  line("bucket_cap_mb", number(d.bucket_cap_mb));
  line("first_bucket_mb", number(d.first_bucket_mb));
  line("find_unused_parameters", yes(d.find_unused_parameters));
  line("gradient_as_bucket_view", yes(d.gradient_as_bucket_view));
  line("broadcast_buffers", yes(d.broadcast_buffers));
  line("overlap", yes(d.overlap));
  line("comm_hook", d.comm_hook);
  line("num_parameter_tensors", std::to_string(d.num_parameter_tensors));
  line("total_parameter_bytes", std::to_string(d.total_parameter_bytes));
  line("bucket_sizes_bytes", list(d.bucket_sizes_bytes));
  line("bucket_parameter_counts", list(d.bucket_parameter_counts));
  line("buckets_rebuilt", yes(d.buckets_rebuilt));
  line("unused_parameters", list(d.unused_parameters));
  line("iterations", std::to_string(d.iterations));
  line("averaged_steps", std::to_string(d.averaged_steps));
  line("averaged_forwards", std::to_string(d.averaged_forwards));
  line("avg_forward", ms(d.avg_forward_seconds));
  line("avg_backward_compute", ms(d.avg_backward_compute_seconds));
  line("avg_comm", ms(d.avg_comm_seconds));
  line("avg_exposed_comm", ms(d.avg_exposed_comm_seconds));
  line("comm_overlap_ratio", ratio);
  return text;
}

}  // namespace syncgrad::distributed
