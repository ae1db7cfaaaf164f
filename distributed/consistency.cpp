// check_same_on_all_ranks: allgather a fingerprint of the settings; only on a mismatch allgather the settings
// themselves and name the first difference. The sampler and optimizer checks describe those as settings.
#include "distributed/consistency.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "distributed/collective_caller.h"
#include "distributed/errors.h"
#include "distributed/host_values.h"
#include "tensor/check.h"

namespace syncgrad::distributed {

namespace {

// Each setting as "<length>:<name><length>:<value>", so names and values may hold any character.
std::string encode(const Settings& settings) {
  std::string text;
  for (const auto& [name, value] : settings) {
    text += std::to_string(name.size()) + ":" + name + std::to_string(value.size()) + ":" + value;
  }
  return text;
}

Settings decode(const std::string& text) {
  Settings settings;
  size_t at = 0;
  const auto field = [&] {
    const size_t colon = text.find(':', at);
    const size_t length = std::stoul(text.substr(at, colon - at));
    std::string value = text.substr(colon + 1, length);
    at = colon + 1 + length;
    return value;
  };
  while (at < text.size()) {
    std::string name = field();
    settings.emplace_back(std::move(name), field());
  }
  return settings;
}

int64_t fingerprint(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return static_cast<int64_t>(hash);
}

std::vector<int64_t> allgather_one(ProcessGroup& group, int64_t value) {
  std::vector<int64_t> values;
  for (const std::vector<int64_t>& rank_values : PendingValues::allgather(group, {value}).wait()) {
    values.push_back(rank_values[0]);
  }
  return values;
}

// Every rank's text, sent as bytes packed into int64 words.
std::vector<std::string> allgather_text(ProcessGroup& group, const std::string& text) {
  const auto lengths = allgather_one(group, static_cast<int64_t>(text.size()));
  int64_t longest = 0;
  for (int64_t n : lengths) longest = std::max(longest, n);
  std::vector<int64_t> words(static_cast<size_t>((longest + 7) / 8), 0);
  std::memcpy(words.data(), text.data(), text.size());
  const auto gathered = PendingValues::allgather(group, words).wait();
  std::vector<std::string> texts;
  for (int r = 0; r < group.size(); ++r) {
    texts.emplace_back(reinterpret_cast<const char*>(gathered[r].data()), static_cast<size_t>(lengths[r]));
  }
  return texts;
}

std::string shown(const std::string& value) { return value.empty() ? "\"\"" : value; }

std::string entry(const std::pair<std::string, std::string>& setting) {
  return setting.first + " " + shown(setting.second);
}

// The first difference between rank r's settings and rank 0's, and how many settings differ in all; empty
// when they match.
std::string first_difference(const Settings& reference, const Settings& mine, int r, int* differences) {
  const std::string other = "rank " + std::to_string(r);
  std::string first;
  *differences = 0;
  for (size_t i = 0; i < std::max(reference.size(), mine.size()); ++i) {
    if (i < reference.size() && i < mine.size() && reference[i] == mine[i]) continue;
    ++*differences;
    if (!first.empty()) continue;
    if (i >= mine.size()) {
      first = other + " has no " + reference[i].first + ", rank 0 has " + entry(reference[i]) + " (" + other +
              " has " + std::to_string(mine.size()) + " settings, rank 0 has " + std::to_string(reference.size()) + ")";
    } else if (i >= reference.size()) {
      first = other + " has " + entry(mine[i]) + ", rank 0 has no " + mine[i].first + " (" + other + " has " +
              std::to_string(mine.size()) + " settings, rank 0 has " + std::to_string(reference.size()) + ")";
    } else if (reference[i].first == mine[i].first) {
      first = other + " has " + entry(mine[i]) + ", rank 0 has " + shown(reference[i].second);
    } else {
      first = other + " has " + entry(mine[i]) + " where rank 0 has " + entry(reference[i]) + " (setting #" +
              std::to_string(i) + ")";
    }
  }
  return first;
}

}  // namespace

std::string setting_text(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

void check_same_on_all_ranks(ProcessGroup& group, const Settings& settings, const std::string& what,
                             const std::string& hint) {
  const std::string mine = encode(settings);
  const CollectiveCaller caller("agreement check: %s", what.c_str());
  const auto prints = allgather_one(group, fingerprint(mine));
  if (std::all_of(prints.begin(), prints.end(), [&](int64_t p) { return p == prints[0]; })) return;
  const auto texts = allgather_text(group, mine);
  const Settings reference = decode(texts[0]);
  for (int r = 1; r < group.size(); ++r) {
    int differences = 0;
    const std::string first = first_difference(reference, decode(texts[r]), r, &differences);
    if (first.empty()) continue;
    const std::string more =
        differences > 1 ? " (" + std::to_string(differences) + " settings differ in all)" : std::string();
    throw DesyncError(what + ": the ranks disagree: " + first + more + "; " + hint);
  }
  throw DesyncError(what + ": the ranks disagree (their fingerprints differ) although their settings read the same; " +
                    hint);
}

void check_sampler_agrees(ProcessGroup& group, const data::DistributedSampler& sampler) {
  SYNCGRAD_CHECK(sampler.num_replicas() == group.size() && sampler.rank() == group.rank(), ValueError,
                 "DistributedSampler: built for rank ", sampler.rank(), " of ", sampler.num_replicas(),
                 " replicas, but this process is rank ", group.rank(), " of ", group.size(),
                 " in the group; pass num_replicas = the group's size and rank = its rank");
  check_same_on_all_ranks(group, sampler.settings(), "DistributedSampler",
                          "every rank must build its sampler with the same seed, shuffle and drop_last over the "
                          "same dataset, and set the same epoch");
}

void check_optimizer_agrees(ProcessGroup& group, const optim::Optimizer& optimizer) {
  check_same_on_all_ranks(group, optimizer.settings(), "optimizer",
                          "every rank must build the same optimizer with the same param groups and options");
}

}  // namespace syncgrad::distributed
