// The process's peak resident set size (VmHWM of /proc/self/status): the run summary's and the metrics log's.
#pragma once

namespace syncgrad::train {

// In KiB; 0 where /proc/self/status has no VmHWM line.
long peak_rss_kib();

}  // namespace syncgrad::train
