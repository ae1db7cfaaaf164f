// StaticGraph: the bookkeeping behind DDPOptions::static_graph. The first synchronised backward records, per
// parameter, how many times its gradient arrived (its post-accumulate hook fired): more than once when a
// reentrant checkpoint (nn/checkpoint.h) recomputes a part that uses it, or when it is used both inside and
// outside such a part; zero when the graph does not use it. Every later backward must repeat that record: a
// parameter's gradient is final -- and goes into its bucket -- at its last expected arrival, parameters the
// record leaves out contribute zeros from the start, and any other count is a DistributedError naming the
// parameter (the graph changed, so the static_graph promise does not hold).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace syncgrad::distributed {

class StaticGraph {
 public:
  explicit StaticGraph(std::vector<std::string> names);

  // The first backward (the one that records) has not finished yet.
  bool recording() const { return !recorded_; }
  // A backward begins.
  void begin();
  // Parameter `index`'s gradient arrived. True when that is its last expected arrival (never while recording);
  // a DistributedError when it arrives more often than recorded.
  bool arrive(size_t index);
  // The parameters the record gives no gradient (empty while recording).
  std::vector<size_t> unused() const;
  // The backward ends. Recording: keeps the counts and returns the parameters that got a gradient, in the order
  // of their last arrival (their gradients are final now). Later: a DistributedError naming the first parameter
  // whose count differs from the record; returns nothing.
  std::vector<size_t> finish();

 private:
  std::string describe(size_t index, int arrived) const;

  std::vector<std::string> names_;
  std::vector<int> expected_;
  std::vector<int> arrived_;
  std::vector<size_t> last_arrival_order_;
  bool recorded_ = false;
};

}  // namespace syncgrad::distributed
