// Parses --nnodes: a node count, or MIN:MAX for an elastic job.
#include "tools/launch/node_range.h"

#include <charconv>
#include <optional>
#include <string_view>

#include "tools/launch/errors.h"

namespace syncgrad::launch {
namespace {

std::optional<int> parse_count(std::string_view text, int max_nodes) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 1 || value > max_nodes) return std::nullopt;
  return value;
}

}  // namespace

NodeRange parse_node_range(const std::string& text, int max_nodes) {
  const size_t colon = text.find(':');
  const std::string_view whole(text);
  std::optional<int> min = parse_count(whole.substr(0, colon), max_nodes);
  std::optional<int> max = colon == std::string::npos ? min : parse_count(whole.substr(colon + 1), max_nodes);
  if (!min || !max) {
    throw UsageError("--nnodes " + text + ": expected an integer >= 1 (the job's nodes, e.g. --nnodes 2) or MIN:MAX " +
                     "for an elastic job (e.g. --nnodes 1:4), counts up to " + std::to_string(max_nodes));
  }
  if (*min > *max) {
    throw UsageError("--nnodes " + text + ": MIN " + std::to_string(*min) + " is above MAX " + std::to_string(*max) +
                     "; write the smaller count first, e.g. --nnodes " + std::to_string(*max) + ":" +
                     std::to_string(*min));
  }
  return {*min, *max};
}

}  // namespace syncgrad::launch
