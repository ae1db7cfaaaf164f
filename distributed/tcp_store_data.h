// Internal: the key-value semantics every store shares (TCPStoreServer's table, HashStore, FileStore's
// replayed log): decimal counters for add(), compare_set(), and key lists quoted for error messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "distributed/store.h"

namespace syncgrad::distributed::store_data {

using Table = std::map<std::string, Bytes>;

// Adds delta to the decimal integer under key (absent = 0), stores it as decimal text and returns it.
// A value that is not a decimal integer, or an overflow, is a ValueError naming `who` and the key.
int64_t add(Table& table, const std::string& key, int64_t delta, const char* who);
// Store::compare_set on a table: returns the value under key afterwards (empty when absent).
Bytes compare_set(Table& table, const std::string& key, const Bytes& expected, const Bytes& desired);
// A wait timeout clamped to [0, 10 years] so that now() + timeout cannot overflow.
std::chrono::milliseconds clamp_timeout(std::chrono::milliseconds timeout);
// Keys of `keys` absent from the table, in order.
std::vector<std::string> missing(const Table& table, const std::vector<std::string>& keys);
// "'a', 'b' and 3 more" with unprintable bytes escaped, for error messages.
std::string quote_keys(const std::vector<std::string>& keys);
std::string quote_key(const std::string& key);
// Throws the TimeoutError of a get/wait: "<who>.<op>: timed out after <timeout> ms; keys still missing: ...",
// then the store's note on what else it saw meanwhile, when there is one.
[[noreturn]] void throw_timeout(const std::string& who, const std::string& op, std::chrono::milliseconds timeout,
                                const std::vector<std::string>& missing, const std::string& note = "");

}  // namespace syncgrad::distributed::store_data
