// FileStore: a Store kept in one file on a file system every rank can see (file:// init). Each operation
// takes an flock on the file, replays its append-only log, and appends; the last of `world_size` users
// to destroy its FileStore removes the file.
#pragma once

#include <string>

#include "distributed/store.h"

namespace syncgrad::distributed {

class FileStore : public Store {
 public:
  // A path whose directory does not exist or is not writable is an IOError naming it.
  FileStore(std::string path, int world_size, std::chrono::milliseconds timeout = kDefaultTimeout);
  ~FileStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  bool delete_key(const std::string& key) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::set;
  using Store::wait;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int world_size_;
};

}  // namespace syncgrad::distributed
