// FileStore: every operation opens the shared file, takes an exclusive flock, replays the append-only log
// into a table, applies the operation (appending a record when it changes something) and releases the lock.
// get/wait poll the file with a short sleep until their deadline.
//
// Log record: u8 op ('S' set, 'D' delete), u32 key length, key, and for 'S' u32 value length, value (lengths
// little-endian). Keys are namespaced by their first byte: 'u' user keys, 'i' the store's own counters (users
// and finished users, for removing the file). A torn record at the end (a writer that died mid-append) is
// cut off by the next writer. A world_size below 1 means "unknown": the file then goes when its last
// current user does.
#include "distributed/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <utility>

#include "distributed/errors.h"
#include "distributed/socket.h"
#include "distributed/tcp_store_data.h"

namespace syncgrad::distributed {

namespace {

constexpr std::chrono::milliseconds kPollInterval{10};
const std::string kUsersKey = "iusers";
const std::string kFinishedKey = "ifinished";

std::string user_key(const std::string& key) { return "u" + key; }

std::string os_reason(int err) {
  std::string text = net::errno_text(err);
  if (err == ENOENT) text += " (the directory does not exist; create it or fix the file:// path)";
  if (err == EACCES || err == EPERM || err == EROFS) text += " (no permission to write there; pick a writable path)";
  return text;
}

void put_u32(Bytes& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// The file opened and exclusively locked, with its log replayed into table().
class LockedLog {
 public:
  LockedLog(const std::string& path, const char* op) : path_(path), op_(op) {
    fd_ = net::Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd_.valid()) fail("cannot open", errno);
    while (::flock(fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) fail("cannot lock", errno);
    }
    replay();
  }
  ~LockedLog() { ::flock(fd_.get(), LOCK_UN); }
  LockedLog(const LockedLog&) = delete;
  LockedLog& operator=(const LockedLog&) = delete;

  store_data::Table& table() { return table_; }

  void append_set(const std::string& key, const Bytes& value) {
    Bytes record{'S'};
    put_u32(record, static_cast<uint32_t>(key.size()));
    record.insert(record.end(), key.begin(), key.end());
    put_u32(record, static_cast<uint32_t>(value.size()));
    record.insert(record.end(), value.begin(), value.end());
    append(record);
  }

  void append_delete(const std::string& key) {
    Bytes record{'D'};
    put_u32(record, static_cast<uint32_t>(key.size()));
    record.insert(record.end(), key.begin(), key.end());
    append(record);
  }

  // Appends a set record for whatever the table now holds under key.
  void append_current(const std::string& key) { append_set(key, table_.at(key)); }

 private:
  [[noreturn]] void fail(const char* what, int err) const {
    throw IOError(std::string(op_) + ": " + what + " '" + path_ + "': " + os_reason(err));
  }

  void replay() {
    Bytes data;
    uint8_t chunk[65536];
    for (;;) {
      ssize_t n = ::pread(fd_.get(), chunk, sizeof chunk, static_cast<off_t>(data.size()));
      if (n > 0) {
        data.insert(data.end(), chunk, chunk + n);
      } else if (n == 0) {
        break;
      } else if (errno != EINTR) {
        fail("cannot read", errno);
      }
    }
    size_t pos = 0;
    auto read_u32 = [&](uint32_t& v) {
      if (data.size() - pos < 4) return false;
      v = uint32_t{data[pos]} | uint32_t{data[pos + 1]} << 8 | uint32_t{data[pos + 2]} << 16 |
          uint32_t{data[pos + 3]} << 24;
      pos += 4;
      return true;
    };
    size_t complete = 0;
    while (pos < data.size()) {
      const uint8_t op = data[pos++];
      uint32_t key_size = 0;
      if ((op != 'S' && op != 'D') || !read_u32(key_size) || data.size() - pos < key_size) break;
      std::string key(reinterpret_cast<const char*>(data.data() + pos), key_size);
      pos += key_size;
      if (op == 'D') {
        table_.erase(key);
      } else {
        uint32_t value_size = 0;
        if (!read_u32(value_size) || data.size() - pos < value_size) break;
        table_[key] = Bytes(data.begin() + static_cast<std::ptrdiff_t>(pos),
                            data.begin() + static_cast<std::ptrdiff_t>(pos + value_size));
        pos += value_size;
      }
      complete = pos;
    }
    end_ = complete;
    if (complete != data.size() && ::ftruncate(fd_.get(), static_cast<off_t>(complete)) != 0) {
      fail("cannot repair the torn end of", errno);
    }
  }

  void append(const Bytes& record) {
    size_t done = 0;
    while (done < record.size()) {
      ssize_t n = ::pwrite(fd_.get(), record.data() + done, record.size() - done, static_cast<off_t>(end_ + done));
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno != EINTR) {
        fail("cannot write", errno);
      }
    }
    end_ += record.size();
  }

  std::string path_;
  const char* op_;
  net::Fd fd_;
  store_data::Table table_;
  size_t end_ = 0;
};

}  // namespace

FileStore::FileStore(std::string path, int world_size, std::chrono::milliseconds timeout)
    : Store(timeout), path_(std::move(path)), world_size_(world_size) {
  LockedLog log(path_, "FileStore");
  store_data::add(log.table(), kUsersKey, 1, "FileStore");
  log.append_current(kUsersKey);
}

FileStore::~FileStore() {
  // The last of world_size users removes the file (with an unknown world size, when no user is left).
  try {
    LockedLog log(path_, "~FileStore");
    const int64_t finished = store_data::add(log.table(), kFinishedKey, 1, "FileStore");
    const int64_t users = store_data::add(log.table(), kUsersKey, -1, "FileStore");
    if (world_size_ > 0 ? finished >= world_size_ : users <= 0) {
      ::unlink(path_.c_str());
    } else {
      log.append_current(kFinishedKey);
      log.append_current(kUsersKey);
    }
  } catch (const std::exception&) {
    // A destructor cannot report: the file may have been removed by hand; nothing is left to clean up.
  }
}

void FileStore::set(const std::string& key, const Bytes& value) {
  LockedLog log(path_, "FileStore.set");
  log.append_set(user_key(key), value);
}

Bytes FileStore::get(const std::string& key) {
  const auto t = store_data::clamp_timeout(timeout());
  const net::Deadline deadline = net::Deadline::after(t);
  for (;;) {
    {
      LockedLog log(path_, "FileStore.get");
      auto it = log.table().find(user_key(key));
      if (it != log.table().end()) return it->second;
    }
    if (deadline.expired()) {
      store_data::throw_timeout("FileStore(" + path_ + ")", "get(" + store_data::quote_key(key) + ")", t, {key});
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  LockedLog log(path_, "FileStore.add");
  const std::string k = user_key(key);
  auto it = log.table().find(k);
  if (it != log.table().end()) {
    // Report the user's key, not the namespaced one.
    store_data::Table probe{{key, it->second}};
    store_data::add(probe, key, delta, "FileStore");
  }
  const int64_t value = store_data::add(log.table(), k, delta, "FileStore");
  log.append_current(k);
  return value;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  LockedLog log(path_, "FileStore.compare_set");
  const std::string k = user_key(key);
  auto before = log.table().find(k);
  const bool existed = before != log.table().end();
  const Bytes old = existed ? before->second : Bytes{};
  Bytes now = store_data::compare_set(log.table(), k, expected, desired);
  if (log.table().count(k) != 0 && (!existed || old != now)) log.append_current(k);
  return now;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  LockedLog log(path_, "FileStore.check");
  for (const std::string& k : keys) {
    if (log.table().count(user_key(k)) == 0) return false;
  }
  return true;
}

bool FileStore::delete_key(const std::string& key) {
  LockedLog log(path_, "FileStore.delete_key");
  const std::string k = user_key(key);
  if (log.table().erase(k) == 0) return false;
  log.append_delete(k);
  return true;
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const auto t = store_data::clamp_timeout(timeout);
  const net::Deadline deadline = net::Deadline::after(t);
  for (;;) {
    std::vector<std::string> missing;
    {
      LockedLog log(path_, "FileStore.wait");
      for (const std::string& k : keys) {
        if (log.table().count(user_key(k)) == 0) missing.push_back(k);
      }
    }
    if (missing.empty()) return;
    if (deadline.expired()) store_data::throw_timeout("FileStore(" + path_ + ")", "wait", t, missing);
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace syncgrad::distributed
