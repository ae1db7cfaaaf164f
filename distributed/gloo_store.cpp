// GlooStore: Gloo's rendezvous store interface over a syncgrad Store, with "ranks never arrived" errors.
#include "distributed/gloo_store.h"

#include "distributed/errors.h"

namespace syncgrad::distributed {

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  store_->set(key, Bytes(data.begin(), data.end()));
}

std::vector<char> GlooStore::get(const std::string& key) {
  wait({key});
  Bytes value = store_->get(key);
  return std::vector<char>(value.begin(), value.end());
}

void GlooStore::wait(const std::vector<std::string>& keys) { wait(keys, store_->timeout()); }

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) {
  const std::chrono::milliseconds timeout = store_->timeout();
  try {
    store_->wait(keys, timeout);
  } catch (const TimeoutError&) {
    std::string missing;
    for (int rank = 0; rank < world_size_; ++rank) {
      if (!store_->check({std::to_string(rank)})) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
    }
    throw RendezvousError("process group rendezvous: rank(s) " + missing + " never arrived within " +
                          std::to_string(timeout.count()) +
                          " ms; check that every rank was started with the same MASTER_ADDR, MASTER_PORT and "
                          "WORLD_SIZE, and look at the missing ranks' output for an earlier error");
  }
}

}  // namespace syncgrad::distributed
