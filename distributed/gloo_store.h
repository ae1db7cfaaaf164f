// GlooStore: lets Gloo's rendezvous (connectFullMesh) use any syncgrad Store. Gloo waits for one key per
// rank ("0", "1", ...), so a timeout here means those ranks never arrived: it says which. Waits use the
// store's timeout (the rendezvous timeout), not the collective timeout Gloo passes.
#pragma once

#include <gloo/rendezvous/store.h>

#include <memory>

#include "distributed/store.h"

namespace syncgrad::distributed {

class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(std::shared_ptr<distributed::Store> store, int world_size)
      : store_(std::move(store)), world_size_(world_size) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<distributed::Store> store_;
  int world_size_;
};

}  // namespace syncgrad::distributed
