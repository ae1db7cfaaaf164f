// A communication link as the scaling model sees it: a per-message latency alpha and a bandwidth beta, with
// where the two numbers come from (measured here, or a preset for PCIe, NVLink, InfiniBand).
#pragma once

#include <string>
#include <vector>

namespace syncgrad::bench {

struct Link {
  std::string name;                    // "measured", "pcie4", "nvlink4", "ib-hdr", ...
  double alpha_seconds = 0;            // latency of one message (one step of a ring)
  double beta_bytes_per_second = 1e9;  // bandwidth of one direction of one link
  std::string source;                  // one line: how alpha and beta were obtained
  // Collectives of more than split_bytes use the second pair (this machine's Gloo group reduces messages up
  // to 8 MiB with another algorithm than larger ones); 0: one pair for every size.
  double split_bytes = 0;
  double large_alpha_seconds = 0;
  double large_beta_bytes_per_second = 1e9;
};

// One message of `bytes`: alpha + bytes / beta.
double transfer_seconds(double bytes, const Link& link);

// Ring allreduce of `bytes` among p workers: 2(p-1) steps, each sending bytes/p to the next worker:
// 2(p-1)/p * bytes/beta + 2(p-1) * alpha (alpha and beta of the pair for this size); 0 for p == 1.
double ring_allreduce_seconds(double bytes, int p, const Link& link);

// The presets (pcie4, nvlink4, ib-hdr) with their sources.
std::vector<Link> link_presets();
// A preset by name; ValueError listing the names otherwise.
Link link_preset(const std::string& name);

}  // namespace syncgrad::bench
