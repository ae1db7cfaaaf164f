// --nnodes N or --nnodes MIN:MAX (torchrun's elastic form): how many nodes a job runs on. With MIN < MAX the
// job is elastic: it starts, and goes on after a node is lost, with any number of nodes from MIN to MAX.
#pragma once

#include <string>

namespace syncgrad::launch {

struct NodeRange {
  int min = 1;
  int max = 1;
  bool elastic() const { return min < max; }
};

// "N" (min = max = N) or "MIN:MAX" with 1 <= MIN <= MAX <= max_nodes; UsageError naming the value and a fix.
NodeRange parse_node_range(const std::string& text, int max_nodes);

}  // namespace syncgrad::launch
