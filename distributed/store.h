// Store: the small key-value service ranks use to meet (rendezvous) and to exchange setup data such as
// addresses and NCCL ids. Implementations: TCPStore (network), FileStore (shared file), HashStore (one
// process, for threads and tests), PrefixStore (a namespace over another store).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace syncgrad::distributed {

using Bytes = std::vector<uint8_t>;

Bytes to_bytes(std::string_view text);
std::string to_string(const Bytes& bytes);

class Store {
 public:
  // PyTorch's default store timeout.
  static constexpr std::chrono::milliseconds kDefaultTimeout{300'000};

  explicit Store(std::chrono::milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Sets (or replaces) key's value and wakes everyone waiting for it.
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits until key exists (at most timeout()), then returns its value. TimeoutError names the key.
  virtual Bytes get(const std::string& key) = 0;
  // Adds delta to the decimal integer stored under key (absent = 0) atomically; returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Atomically: when key's value equals `expected` (an absent key matches an empty `expected`), stores
  // `desired`. Returns the value stored under key afterwards (empty when still absent).
  virtual Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) = 0;
  // True when every key exists; never waits.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Removes key; true when it existed.
  virtual bool delete_key(const std::string& key) = 0;
  // Waits until every key exists. TimeoutError lists the keys still missing.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

  void set(const std::string& key, std::string_view value) { set(key, to_bytes(value)); }
  std::string get_string(const std::string& key) { return to_string(get(key)); }

  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace syncgrad::distributed
