// HashStore (a mutex-protected table with a condition variable for waiters) and PrefixStore.
#include "distributed/hash_store.h"

#include <utility>

#include "distributed/tcp_store_data.h"
#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::distributed {

void HashStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    data_[key] = value;
  }
  changed_.notify_all();
}

Bytes HashStore::get(const std::string& key) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, store_data::clamp_timeout(timeout()), [&] { return data_.count(key) != 0; })) {
    store_data::throw_timeout("HashStore", "get(" + store_data::quote_key(key) + ")", timeout(), {key});
  }
  return data_.at(key);
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  int64_t result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    result = store_data::add(data_, key, delta, "HashStore");
  }
  changed_.notify_all();
  return result;
}

Bytes HashStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    result = store_data::compare_set(data_, key, expected, desired);
  }
  changed_.notify_all();
  return result;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  return store_data::missing(data_, keys).empty();
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_.erase(key) != 0;
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, store_data::clamp_timeout(timeout),
                         [&] { return store_data::missing(data_, keys).empty(); })) {
    store_data::throw_timeout("HashStore", "wait", timeout, store_data::missing(data_, keys));
  }
}

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultTimeout), prefix_(std::move(prefix)), store_(std::move(store)) {
  SYNCGRAD_CHECK(store_, ValueError, "PrefixStore('", prefix_, "'): the underlying store must not be null");
}

void PrefixStore::set(const std::string& key, const Bytes& value) { store_->set(prefixed(key), value); }

Bytes PrefixStore::get(const std::string& key) { return store_->get(prefixed(key)); }

int64_t PrefixStore::add(const std::string& key, int64_t delta) { return store_->add(prefixed(key), delta); }

Bytes PrefixStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return store_->compare_set(prefixed(key), expected, desired);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const std::string& k : keys) full.push_back(prefixed(k));
  return store_->check(full);
}

bool PrefixStore::delete_key(const std::string& key) { return store_->delete_key(prefixed(key)); }

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const std::string& k : keys) full.push_back(prefixed(k));
  store_->wait(full, timeout);
}

}  // namespace syncgrad::distributed
