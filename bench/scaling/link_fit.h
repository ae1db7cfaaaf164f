// Fitting a Link to measured allreduce times: t = 2(p-1) alpha + 2(p-1)/p * bytes / beta (the ring cost),
// least squares on the relative error so small and large messages weigh alike. With a split size, messages up
// to it and above it get a pair each (this machine's Gloo group switches algorithms at 8 MiB).
#pragma once

#include <vector>

#include "bench/scaling/link.h"
#include "bench/scaling/run_config.h"

namespace syncgrad::bench {

struct LinkFit {
  Link link;
  double worst_relative_error = 0;  // over the samples
  bool times_did_not_grow = false;  // a range fell back to bandwidth alone (alpha 0), as link.source says
};

// p >= 2 and at least two samples of different sizes (on each side of split_bytes when it is > 0 and both
// sides have samples), else ValueError. alpha is kept >= 0; where the times do not grow with size (noise), the
// range is fitted as bandwidth alone through the origin and times_did_not_grow is set.
LinkFit fit_link(const std::vector<AllreduceSample>& samples, int p, double split_bytes = 0);

}  // namespace syncgrad::bench
