// Expands Slurm's compressed host lists (see slurm_nodelist.h). The list is parsed whole first -- so that a
// malformed tail is refused even when only the first host is wanted -- into names made of literal text and
// bracket groups, then the names are expanded group by group, the first group outermost.
#include "distributed/slurm_nodelist.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <string>

#include "distributed/errors.h"

namespace syncgrad::distributed {
namespace {

struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;  // digits of lo as written: the zero padding of every number of the range
};

// One part of a name: literal text, or a bracket group of ranges (then `text` is empty).
struct Part {
  std::string text;
  std::vector<Range> ranges;
};
using Name = std::vector<Part>;

// Numbers of up to 18 digits, so that lo, hi and their difference fit in 64 bits.
constexpr size_t kMaxDigits = 18;

class Parser {
 public:
  Parser(std::string_view list, std::string_view name) : list_(list), name_(name) {}

  std::vector<Name> names() {
    std::vector<Name> names;
    size_t i = 0;
    while (true) {
      while (i < list_.size() && is_separator(list_[i])) ++i;
      if (i == list_.size()) break;
      names.push_back(name_at(i));
    }
    if (names.empty()) fail("it names no host");
    return names;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw RendezvousError(std::string(name_) + "='" + std::string(list_) + "' is not a Slurm node list: " + why +
                          "; expected a list such as 'node[01-04,07],gpu7'");
  }

 private:
  static bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

  // The name starting at i, up to the next separator outside brackets; i ends after it.
  Name name_at(size_t& i) {
    Name name;
    while (i < list_.size() && !is_separator(list_[i])) {
      const char c = list_[i];
      if (c == ']') fail("']' at position " + std::to_string(i) + " closes no '['");
      if (c == '[') {
        const size_t close = list_.find(']', i);
        if (close == std::string_view::npos) fail("'[' at position " + std::to_string(i) + " is never closed");
        const std::string_view group = list_.substr(i + 1, close - i - 1);
        if (group.find('[') != std::string_view::npos) {
          fail("'[' at position " + std::to_string(i) + " holds another '[' (brackets do not nest)");
        }
        name.push_back({"", ranges(group)});
        i = close + 1;
        continue;
      }
      if (name.empty() || !name.back().ranges.empty()) name.push_back({});
      name.back().text += c;
      ++i;
    }
    return name;
  }

  // "01-04,07" -> {1..4 width 2, 7..7 width 2}.
  std::vector<Range> ranges(std::string_view group) const {
    std::vector<Range> out;
    size_t start = 0;
    while (true) {
      const size_t comma = group.find(',', start);
      const std::string_view item = group.substr(start, comma == std::string_view::npos ? comma : comma - start);
      const size_t dash = item.find('-');
      Range r;
      r.lo = number(item.substr(0, dash), group);
      r.width = dash == std::string_view::npos ? item.size() : dash;
      r.hi = dash == std::string_view::npos ? r.lo : number(item.substr(dash + 1), group);
      if (r.lo > r.hi) fail("the range '" + std::string(item) + "' runs backwards");
      if (r.hi - r.lo >= kMaxSlurmRangeHosts) {
        fail("the range '" + std::string(item) + "' holds more than " + std::to_string(kMaxSlurmRangeHosts) +
             " hosts");
      }
      out.push_back(r);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return out;
  }

  uint64_t number(std::string_view digits, std::string_view group) const {
    uint64_t value = 0;
    const char* end = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(digits.data(), end, value);
    if (digits.empty() || digits.size() > kMaxDigits || ec != std::errc() || ptr != end) {
      fail("'[" + std::string(group) + "]' holds '" + std::string(digits) +
           "', which is not a number (a bracket holds numbers and ranges such as 01-04, separated by commas)");
    }
    return value;
  }

  std::string_view list_;
  std::string_view name_;
};

std::string padded(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Calls emit(host) for every host of `name` from part `part` on, `prefix` built so far; false stops.
bool expand(const Name& name, size_t part, const std::string& prefix,
            const std::function<bool(const std::string&)>& emit) {
  if (part == name.size()) return emit(prefix);
  const Part& p = name[part];
  if (p.ranges.empty()) return expand(name, part + 1, prefix + p.text, emit);
  for (const Range& r : p.ranges) {
    for (uint64_t v = r.lo;; ++v) {
      if (!expand(name, part + 1, prefix + padded(v, r.width), emit)) return false;
      if (v == r.hi) break;
    }
  }
  return true;
}

uint64_t host_count(const Name& name) {
  uint64_t count = 1;
  for (const Part& p : name) {
    if (p.ranges.empty()) continue;
    uint64_t hosts = 0;
    for (const Range& r : p.ranges) hosts += r.hi - r.lo + 1;
    // count is at most 2^16 here and hosts below 2^16 times the list's length: the product does not overflow.
    count *= hosts;
    if (count > kMaxSlurmRangeHosts) return count;
  }
  return count;
}

// Parses the whole list, checks its size, and expands it until emit() returns false.
void expand_list(std::string_view list, std::string_view name, const std::function<bool(const std::string&)>& emit) {
  Parser parser(list, name);
  const std::vector<Name> names = parser.names();
  uint64_t total = 0;
  for (const Name& n : names) {
    total += host_count(n);
    if (total > kMaxSlurmRangeHosts) {
      parser.fail("it names more than " + std::to_string(kMaxSlurmRangeHosts) + " hosts");
    }
  }
  for (const Name& n : names) {
    if (!expand(n, 0, "", emit)) return;
  }
}

}  // namespace

std::vector<std::string> expand_slurm_nodelist(std::string_view list, std::string_view name) {
  std::vector<std::string> hosts;
  expand_list(list, name, [&](const std::string& host) {
    hosts.push_back(host);
    return true;
  });
  return hosts;
}

std::string first_slurm_host(std::string_view list, std::string_view name) {
  std::string first;
  expand_list(list, name, [&](const std::string& host) {
    first = host;
    return false;
  });
  return first;
}

}  // namespace syncgrad::distributed
