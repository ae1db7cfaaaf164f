// assemble_zero_state / shard_zero_state: flat segments cut into parameters and back.
#include "distributed/zero_state.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::optim {
namespace {

constexpr const char* kWhere = "ZeroRedundancyOptimizer.load_state_dict: ";

std::string key_of(size_t index, const std::string& name) { return "state." + std::to_string(index) + "." + name; }

// "state.<index>.<name>" -> (index, name); nullopt for anything else.
std::optional<std::pair<size_t, std::string>> split_key(const std::string& key) {
  const std::string prefix = "state.";
  if (key.rfind(prefix, 0) != 0) return std::nullopt;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 >= key.size()) return std::nullopt;
  const std::string digits = key.substr(prefix.size(), dot - prefix.size());
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::make_pair(static_cast<size_t>(std::stoul(digits)), key.substr(dot + 1));
}

using Entries = std::map<std::pair<size_t, std::string>, Tensor>;

Entries entries_of(const OptimizerStateDict& state, const std::string& where) {
  Entries out;
  for (const auto& [key, value] : state.tensors) {
    auto parsed = split_key(key);
    SYNCGRAD_CHECK(parsed.has_value(), ValueError, where, "key '", key,
                   "' is not of the form 'state.<index>.<name>'");
    SYNCGRAD_CHECK(value.defined(), ValueError, where, "key '", key, "' holds an undefined tensor");
    out[*parsed] = value;
  }
  return out;
}

double step_value(const Tensor& t, const std::string& key, const std::string& where) {
  SYNCGRAD_CHECK(t.numel() == 1, ShapeError, where, "key '", key, "' has shape ", shape_str(t.sizes()),
                 "; a step count is a single value");
  const double step = t.item<double>();
  SYNCGRAD_CHECK(step >= 0.0 && step == std::floor(step), ValueError, where, "key '", key, "' holds ", step,
                 "; a step count is an integer >= 0");
  return step;
}

}  // namespace

OptimizerStateDict assemble_zero_state(const distributed::ShardLayout& layout,
                                       const std::vector<OptimizerStateDict>& shard_states,
                                       const std::map<std::string, double>& options, const std::vector<Tensor>& params,
                                       const ZeroStateNames& names) {
  const std::string where = "ZeroRedundancyOptimizer: the sharded state: ";
  const int world = layout.world_size();
  SYNCGRAD_CHECK(static_cast<int>(shard_states.size()) == world, ValueError, where, "got ", shard_states.size(),
                 " shard states for a layout of ", world, " ranks");
  std::vector<Entries> shards;
  for (const OptimizerStateDict& s : shard_states) shards.push_back(entries_of(s, where));

  OptimizerStateDict out;
  std::map<std::string, double> group = options;
  group["params"] = static_cast<double>(layout.num_params());
  out.groups.push_back(std::move(group));
  // Per parameter, in parameter order (as a plain optimizer lists them): step first, then the buffers.
  std::vector<std::vector<std::pair<std::string, Tensor>>> per_param(layout.num_params());
  for (size_t s = 0; s < layout.segments().size(); ++s) {
    const distributed::ShardSegment& segment = layout.segments()[s];
    auto first_entry = shards[0].lower_bound({s, ""});
    const bool has_state = first_entry != shards[0].end() && first_entry->first.first == s;
    if (!has_state) continue;
    if (names.counts_steps) {
      const std::string key = key_of(s, "step");
      double step = -1;
      for (int r = 0; r < world; ++r) {
        auto it = shards[r].find({s, "step"});
        SYNCGRAD_CHECK(it != shards[r].end(), ValueError, where, "rank ", r, " has no '", key, "' (rank 0 has)");
        const double value = step_value(it->second, key, where);
        SYNCGRAD_CHECK(r == 0 || value == step, ValueError, where, "rank ", r, " has '", key, "' = ", value,
                       " but rank 0 has ", step);
        step = value;
      }
      for (size_t param : segment.params) {
        per_param[param].emplace_back("step", scalar_tensor(step, DType::f32, kCPU));
      }
    }
    for (const std::string& name : names.buffers) {
      if (shards[0].count({s, name}) == 0) continue;
      Tensor flat = empty({segment.shard_numel * world}, TensorOptions{params[segment.params.front()].dtype(), kCPU});
      for (int r = 0; r < world; ++r) {
        auto it = shards[r].find({s, name});
        SYNCGRAD_CHECK(it != shards[r].end(), ValueError, where, "rank ", r, " has no '", key_of(s, name),
                       "' (rank 0 has)");
        SYNCGRAD_CHECK(it->second.numel() == segment.shard_numel, ShapeError, where, "rank ", r, "'s '",
                       key_of(s, name), "' has ", it->second.numel(), " elements; the layout's shard has ",
                       segment.shard_numel);
        raw::copy_(raw::narrow(flat, 0, r * segment.shard_numel, segment.shard_numel),
                   raw::reshape(it->second, {segment.shard_numel}));
      }
      for (size_t i = 0; i < segment.params.size(); ++i) {
        const Tensor& p = params[segment.params[i]];
        per_param[segment.params[i]].emplace_back(
            name, raw::clone(raw::view(raw::narrow(flat, 0, segment.offsets[i], p.numel()), p.sizes())));
      }
    }
  }
  for (size_t i = 0; i < per_param.size(); ++i) {
    for (auto& [name, value] : per_param[i]) out.tensors.emplace_back(key_of(i, name), std::move(value));
  }
  return out;
}

OptimizerStateDict shard_zero_state(const distributed::ShardLayout& layout, int rank, const OptimizerStateDict& full,
                                    const std::vector<Tensor>& params, const ZeroStateNames& names) {
  SYNCGRAD_CHECK(full.groups.size() == 1, ValueError, kWhere, "the state has ", full.groups.size(),
                 " parameter groups; ZeroRedundancyOptimizer has one");
  const Entries entries = entries_of(full, kWhere);
  for (const auto& [index_name, value] : entries) {
    const auto& [index, name] = index_name;
    const std::string key = key_of(index, name);
    SYNCGRAD_CHECK(index < params.size(), ValueError, kWhere, "key '", key, "' refers to parameter ", index,
                   " but the optimizer has ", params.size(), " parameters");
    const bool known = (name == "step" && names.counts_steps) ||
                       std::find(names.buffers.begin(), names.buffers.end(), name) != names.buffers.end();
    SYNCGRAD_CHECK(known, ValueError, kWhere, "key '", key, "' names no state of the inner optimizer (unknown entry '",
                   name, "')");
    if (name != "step") {
      SYNCGRAD_CHECK(value.sizes() == params[index].sizes(), ShapeError, kWhere, "key '", key, "' has shape ",
                     shape_str(value.sizes()), " but parameter ", index, " has shape ",
                     shape_str(params[index].sizes()));
    }
  }
  OptimizerStateDict out;
  std::map<std::string, double> group = full.groups[0];
  group["params"] = static_cast<double>(layout.segments().size());
  out.groups.push_back(std::move(group));
  const auto has_any_state = [&](size_t param) {
    auto it = entries.lower_bound({param, ""});
    return it != entries.end() && it->first.first == param;
  };
  for (size_t s = 0; s < layout.segments().size(); ++s) {
    const distributed::ShardSegment& segment = layout.segments()[s];
    const size_t first = segment.params.front();
    const bool with_state = has_any_state(first);
    std::optional<double> step;
    for (size_t param : segment.params) {
      SYNCGRAD_CHECK(has_any_state(param) == with_state, ValueError, kWhere, "parameter ", param,
                     with_state ? " has no state but parameter " : " has state but parameter ", first,
                     " has; ZeroRedundancyOptimizer shards them together (segment ", s,
                     ") and keeps state for all of them or none");
      if (!with_state || !names.counts_steps) continue;
      auto it = entries.find({param, "step"});
      SYNCGRAD_CHECK(it != entries.end(), ValueError, kWhere, "key '", key_of(param, "step"), "' is missing");
      const double value = step_value(it->second, key_of(param, "step"), kWhere);
      SYNCGRAD_CHECK(!step || *step == value, ValueError, kWhere, "parameters ", first, " and ", param,
                     " have different step counts (", *step, " and ", value,
                     "); ZeroRedundancyOptimizer steps them together (segment ", s, ") and needs one count");
      step = value;
    }
    if (!with_state) continue;
    if (step) out.tensors.emplace_back(key_of(s, "step"), scalar_tensor(*step, DType::f32, kCPU));
    const std::vector<distributed::ShardPiece> pieces = layout.pieces(s, rank);
    for (const std::string& name : names.buffers) {
      if (entries.count({first, name}) == 0) continue;
      Tensor shard = zeros({segment.shard_numel}, TensorOptions{params[first].dtype(), kCPU});
      for (const distributed::ShardPiece& piece : pieces) {
        auto it = entries.find({piece.param, name});
        SYNCGRAD_CHECK(it != entries.end(), ValueError, kWhere, "key '", key_of(piece.param, name),
                       "' is missing (parameter ", first, " has '", name, "')");
        const Tensor flat = raw::reshape(it->second, {it->second.numel()});
        raw::copy_(raw::narrow(shard, 0, piece.shard_offset, piece.numel),
                   raw::narrow(flat, 0, piece.param_offset, piece.numel));
      }
      out.tensors.emplace_back(key_of(s, name), std::move(shard));
    }
  }
  return out;
}

}  // namespace syncgrad::optim
