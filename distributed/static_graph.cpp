// StaticGraph: recording the first backward's gradient arrivals and checking later backwards against them.
#include "distributed/static_graph.h"

#include <algorithm>

#include "distributed/errors.h"

namespace syncgrad::distributed {

StaticGraph::StaticGraph(std::vector<std::string> names)
    : names_(std::move(names)), expected_(names_.size(), 0), arrived_(names_.size(), 0) {}

void StaticGraph::begin() {
  std::fill(arrived_.begin(), arrived_.end(), 0);
  last_arrival_order_.clear();
}

bool StaticGraph::arrive(size_t index) {
  const int count = ++arrived_[index];
  if (!recorded_) {
    last_arrival_order_.erase(std::remove(last_arrival_order_.begin(), last_arrival_order_.end(), index),
                              last_arrival_order_.end());
    last_arrival_order_.push_back(index);
    return false;
  }
  if (count > expected_[index]) throw DistributedError(describe(index, count));
  return count == expected_[index];
}

std::vector<size_t> StaticGraph::unused() const {
  std::vector<size_t> indices;
  if (!recorded_) return indices;
  for (size_t i = 0; i < expected_.size(); ++i) {
    if (expected_[i] == 0) indices.push_back(i);
  }
  return indices;
}

std::vector<size_t> StaticGraph::finish() {
  if (!recorded_) {
    expected_ = arrived_;
    recorded_ = true;
    return last_arrival_order_;
  }
  for (size_t i = 0; i < arrived_.size(); ++i) {
    if (arrived_[i] != expected_[i]) throw DistributedError(describe(i, arrived_[i]));
  }
  return {};
}

std::string StaticGraph::describe(size_t index, int arrived) const {
  return "DistributedDataParallel(static_graph=true): parameter " + names_[index] + " got its gradient " +
         std::to_string(arrived) + " time(s) in this backward, but " + std::to_string(expected_[index]) +
         " time(s) in the first one, which static_graph recorded; the graph changed between iterations. Keep "
         "the set of parameters used (and how often each is recomputed) the same every step, or drop "
         "static_graph (and reentrant checkpointing of the parts that change)";
}

}  // namespace syncgrad::distributed
