// check_same_on_all_ranks: allgather a fingerprint; on a mismatch allgather the full descriptions and say
// where they differ.
#include "distributed/consistency.h"

#include <algorithm>
#include <cstring>

#include "distributed/errors.h"
#include "distributed/host_values.h"

namespace syncgrad::distributed {

namespace {

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

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

void check_same_on_all_ranks(ProcessGroup& group, const std::vector<std::string>& entries, const std::string& what) {
  std::string joined;
  for (const std::string& e : entries) joined += e + "\n";
  const auto prints = allgather_one(group, fingerprint(joined));
  bool same = true;
  for (int64_t p : prints) same = same && p == prints[0];
  if (same) return;
  const auto texts = allgather_text(group, joined);
  const auto reference = split_lines(texts[0]);
  for (int r = 1; r < group.size(); ++r) {
    const auto lines = split_lines(texts[r]);
    for (size_t i = 0; i < std::max(lines.size(), reference.size()); ++i) {
      const std::string a = i < reference.size() ? reference[i] : "(nothing)";
      const std::string b = i < lines.size() ? lines[i] : "(nothing)";
      if (a == b) continue;
      throw DesyncError(what + ": ranks disagree at entry #" + std::to_string(i) + ": rank 0 has \"" + a +
                        "\", rank " + std::to_string(r) + " has \"" + b +
                        "\"; every rank must build the same model and pass the same options");
    }
  }
  throw DesyncError(what + ": ranks disagree (fingerprints differ) but the descriptions match");
}

}  // namespace syncgrad::distributed
