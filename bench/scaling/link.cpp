// Link costs and the link presets. The presets are the published line rates of each interconnect times the
// fraction that collective libraries reach in practice; see docs/SCALING.md for the reasoning.
#include "bench/scaling/link.h"

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::bench {

double transfer_seconds(double bytes, const Link& link) {
  return link.alpha_seconds + bytes / link.beta_bytes_per_second;
}

double ring_allreduce_seconds(double bytes, int p, const Link& link) {
  SYNCGRAD_CHECK(p >= 1, ValueError, "ring_allreduce_seconds: worker count must be >= 1, got ", p);
  if (p == 1) return 0;
  const bool large = link.split_bytes > 0 && bytes > link.split_bytes;
  const double alpha = large ? link.large_alpha_seconds : link.alpha_seconds;
  const double beta = large ? link.large_beta_bytes_per_second : link.beta_bytes_per_second;
  const double steps = 2.0 * (p - 1);
  return steps / p * bytes / beta + steps * alpha;
}

std::vector<Link> link_presets() {
  return {
      {"pcie4", 10e-6, 24e9,
       "PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s per direction; ~75% of it (24 GB/s) is what "
       "ring allreduce reaches through PCIe switches; alpha 10 us per ring step (kernel launch + PCIe round trip)"},
      {"nvlink4", 3e-6, 370e9,
       "NVLink 4 (H100 SXM): 18 links x 25 GB/s = 450 GB/s per direction; ~82% of it (370 GB/s) as allreduce "
       "bus bandwidth inside an 8-GPU NVSwitch node; alpha 3 us per ring step"},
      {"ib-hdr", 5e-6, 23e9,
       "InfiniBand HDR: 200 Gb/s = 25 GB/s per port and direction; ~92% of it (23 GB/s) with RDMA; alpha 5 us "
       "per ring step (~1-2 us wire and switch latency plus the collective library's per-step overhead)"},
  };
}

Link link_preset(const std::string& name) {
  std::string known;
  for (const Link& link : link_presets()) {
    if (link.name == name) return link;
    known += (known.empty() ? "" : ", ") + link.name;
  }
  throw ValueError("unknown link preset \"" + name + "\"; known presets: " + known + " (or \"measured\")");
}

}  // namespace syncgrad::bench
