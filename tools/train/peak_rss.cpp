// VmHWM from /proc/self/status (see peak_rss.h).
#include "tools/train/peak_rss.h"

#include <fstream>
#include <string>

namespace syncgrad::train {

long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

}  // namespace syncgrad::train
