// The cross-rank agreement check: settings that every rank of a job must share (hyperparameters, a sampler's
// seed and sizes, an optimizer's param-group options, DDP's parameters and options) are compared at start, so
// that ranks started with different options fail at once, on every rank, with the first difference named
// ("rank 1 has lr 0.1, rank 0 has 0.05"), instead of training silently apart or timing out later.
//
// DistributedDataParallel checks its own parameters and options at construction. For a user's own loop:
//   dist::check_same_on_all_ranks(group, {{"lr", "0.05"}, {"epochs", "3"}}, "my_train");
//   dist::check_sampler_agrees(group, sampler);        // seed, shuffle, drop_last, dataset size, num_replicas
//   dist::check_optimizer_agrees(group, optimizer);    // the optimizer's kind and every group's options
// Each is one small collective when the ranks agree (a fingerprint per rank), so every rank must call it, in
// the same order as its other collectives.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "data/sampler.h"
#include "distributed/process_group.h"
#include "optim/optimizer.h"

namespace syncgrad::distributed {

// (name, value) pairs describing this rank, in an order that is the same on every rank.
using Settings = std::vector<std::pair<std::string, std::string>>;

// A setting's value as text: exact (the shortest form that reads back as the same double: 0.05, 1e-08,
// 0.30000000000000004), so two values that differ anywhere never read the same.
std::string setting_text(double value);
inline std::string setting_text(bool value) { return value ? "true" : "false"; }

// A DesyncError on every rank unless all ranks pass the same `settings`. The message starts with `what`, names
// the first setting where a rank differs from rank 0 with both values ("rank 1 has lr 0.1, rank 0 has 0.05";
// a setting missing on one side, or settings in another order, are named too), counts the differences, and
// ends with `hint`.
void check_same_on_all_ranks(ProcessGroup& group, const Settings& settings, const std::string& what,
                             const std::string& hint = "start every rank with the same settings");

// A DistributedSampler built for this group: ValueError when its num_replicas or rank are not the group's;
// DesyncError when the ranks' samplers differ in seed, shuffle, drop_last, dataset size, num_replicas or epoch
// (their shards would overlap or leave samples out).
void check_sampler_agrees(ProcessGroup& group, const data::DistributedSampler& sampler);

// DesyncError when the ranks' optimizers differ in kind, number of param groups, a group's parameter count or
// any of its options (lr, momentum, weight_decay, betas, ...): the replicas would drift apart.
void check_optimizer_agrees(ProcessGroup& group, const optim::Optimizer& optimizer);

}  // namespace syncgrad::distributed
