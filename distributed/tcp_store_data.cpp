// Key-value semantics shared by TCPStoreServer, HashStore and FileStore (tcp_store_data.h).
#include "distributed/tcp_store_data.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "distributed/errors.h"
#include "tensor/check.h"

namespace syncgrad::distributed::store_data {

namespace {

constexpr size_t kMaxQuotedKeys = 8;
constexpr size_t kMaxQuotedKeyChars = 200;
constexpr std::chrono::milliseconds kMaxTimeout{std::chrono::hours(24 * 365 * 10)};

}  // namespace

int64_t add(Table& table, const std::string& key, int64_t delta, const char* who) {
  int64_t current = 0;
  auto it = table.find(key);
  if (it != table.end()) {
    const auto* first = reinterpret_cast<const char*>(it->second.data());
    const auto* last = first + it->second.size();
    auto [end, ec] = std::from_chars(first, last, current);
    SYNCGRAD_CHECK(ec == std::errc() && end == last && first != last, ValueError, who, ".add(", quote_key(key),
                   "): the value under the key is not a decimal integer (", quote_key(to_string(it->second)),
                   "); add() only works on counters created by add() or set to decimal text");
  }
  int64_t result = 0;
  SYNCGRAD_CHECK(!__builtin_add_overflow(current, delta, &result), ValueError, who, ".add(", quote_key(key), ", ",
                 delta, "): the counter (", current, ") would overflow int64");
  table[key] = to_bytes(std::to_string(result));
  return result;
}

Bytes compare_set(Table& table, const std::string& key, const Bytes& expected, const Bytes& desired) {
  auto it = table.find(key);
  if (it == table.end()) {
    if (!expected.empty()) return {};
    table.emplace(key, desired);
    return desired;
  }
  if (it->second == expected) it->second = desired;
  return it->second;
}

std::chrono::milliseconds clamp_timeout(std::chrono::milliseconds timeout) {
  return std::clamp(timeout, std::chrono::milliseconds(0), kMaxTimeout);
}

std::vector<std::string> missing(const Table& table, const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    if (table.find(k) == table.end()) out.push_back(k);
  }
  return out;
}

std::string quote_key(const std::string& key) {
  std::string out = "'";
  size_t shown = 0;
  for (char c : key) {
    if (shown++ == kMaxQuotedKeyChars) {
      out += "...(" + std::to_string(key.size()) + " bytes)";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '\'' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string quote_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < kMaxQuotedKeys; ++i) {
    if (i > 0) out += ", ";
    out += quote_key(keys[i]);
  }
  if (keys.size() > kMaxQuotedKeys) out += " and " + std::to_string(keys.size() - kMaxQuotedKeys) + " more";
  return out;
}

void throw_timeout(const std::string& who, const std::string& op, std::chrono::milliseconds timeout,
                   const std::vector<std::string>& missing, const std::string& note) {
  throw TimeoutError(who + "." + op + ": timed out after " + std::to_string(timeout.count()) +
                     " ms; keys still missing: " + quote_keys(missing) +
                     " (the rank that should set them may have failed or be slower: check its log, or raise "
                     "the timeout)" +
                     (note.empty() ? "" : "; " + note));
}

}  // namespace syncgrad::distributed::store_data
