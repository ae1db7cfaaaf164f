// plan_buckets: greedy filling per (dtype, device) in the given order, PyTorch's first-bucket rule.
#include "distributed/bucket_plan.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace syncgrad::distributed {

std::vector<std::vector<size_t>> plan_buckets(const std::vector<ParamInfo>& params, const std::vector<size_t>& order,
                                              size_t first_bucket_bytes, size_t bucket_bytes) {
  struct Open {
    std::vector<size_t> members;
    size_t bytes = 0;
  };
  using Key = std::tuple<int, int, int>;  // dtype, device type, device index
  std::map<Key, Open> open;
  std::vector<std::vector<size_t>> buckets;
  bool first_closed = false;
  for (size_t index : order) {
    const ParamInfo& p = params[index];
    const Key key{static_cast<int>(p.dtype), static_cast<int>(p.device.type), p.device.index};
    Open& bucket = open[key];
    bucket.members.push_back(index);
    bucket.bytes += static_cast<size_t>(p.numel) * element_size(p.dtype);
    const size_t cap = first_closed ? bucket_bytes : first_bucket_bytes;
    if (bucket.bytes >= cap) {
      buckets.push_back(std::move(bucket.members));
      open.erase(key);
      first_closed = true;
    }
  }
  // Left-over partial buckets, in the order their first member appeared.
  std::vector<std::pair<size_t, std::vector<size_t>>> rest;
  std::map<size_t, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (auto& [key, bucket] : open) {
    if (!bucket.members.empty()) rest.emplace_back(position[bucket.members.front()], std::move(bucket.members));
  }
  std::sort(rest.begin(), rest.end());
  for (auto& [first, members] : rest) buckets.push_back(std::move(members));
  return buckets;
}

}  // namespace syncgrad::distributed
