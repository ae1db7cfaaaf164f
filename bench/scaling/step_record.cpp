// Medians and spreads of step timings, and their JSON form (ranks hand their steps to the bench in JSON).
#include "bench/scaling/step_record.h"

#include <algorithm>
#include <functional>

namespace syncgrad::bench {
namespace {

double quantile(std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// Every field of StepRecord with its name, for medians and JSON.
const std::vector<std::pair<const char*, double StepRecord::*>>& fields() {
  static const std::vector<std::pair<const char*, double StepRecord::*>> all = {
      {"data_wait", &StepRecord::data_wait},
      {"forward", &StepRecord::forward},
      {"loss", &StepRecord::loss},
      {"backward", &StepRecord::backward},
      {"exposed_comm", &StepRecord::exposed_comm},
      {"comm", &StepRecord::comm},
      {"optimizer", &StepRecord::optimizer},
      {"hook_launch", &StepRecord::hook_launch},
      {"hook_finish", &StepRecord::hook_finish},
      {"step", &StepRecord::step},
      {"replicate", &StepRecord::replicate},
      {"scatter", &StepRecord::scatter},
      {"gather", &StepRecord::gather},
      {"reduce", &StepRecord::reduce},
  };
  return all;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return quantile(values, 0.5);
}

double relative_spread(std::vector<double> values) {
  if (values.size() < 2) return 0;
  std::sort(values.begin(), values.end());
  const double mid = quantile(values, 0.5);
  return mid > 0 ? (quantile(values, 0.75) - quantile(values, 0.25)) / 2 / mid : 0;
}

StepRecord median_split(const std::vector<StepRecord>& steps) {
  StepRecord split;
  for (const auto& [name, member] : fields()) {
    std::vector<double> values;
    for (const StepRecord& s : steps) values.push_back(s.*member);
    split.*member = median(values);
  }
  return split;
}

nlohmann::json to_json(const StepRecord& record) {
  nlohmann::json j;
  for (const auto& [name, member] : fields()) j[name] = record.*member;
  return j;
}

StepRecord step_record_from_json(const nlohmann::json& j) {
  StepRecord record;
  for (const auto& [name, member] : fields()) record.*member = j.value(name, 0.0);
  return record;
}

}  // namespace syncgrad::bench
