// Temporary names, the registry of live temporaries and the removal of stale ones (see temporary_files.h).
#include "tensor/io/temporary_files.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>

#include "tensor/errors.h"

namespace syncgrad::io {
namespace {

namespace fs = std::filesystem;

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::multiset<std::string>& registry() {
  static std::multiset<std::string> live;
  return live;
}

// One spelling per path: "a//b/./c" and an absolute path to it compare equal.
std::string key_of(const std::string& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  return (ec ? fs::path(path) : absolute).lexically_normal().string();
}

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string temporary_name_for(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

bool is_temporary_name(const std::string& file_name) {
  // <stem>.tmp.<pid>.<n>
  const size_t last_dot = file_name.rfind('.');
  if (last_dot == std::string::npos || last_dot == 0) return false;
  const size_t pid_dot = file_name.rfind('.', last_dot - 1);
  if (pid_dot == std::string::npos || pid_dot < 4) return false;
  return file_name.compare(pid_dot - 4, 4, ".tmp") == 0 && all_digits(file_name.substr(pid_dot + 1, last_dot - pid_dot - 1)) &&
         all_digits(file_name.substr(last_dot + 1));
}

LiveTemporary::LiveTemporary(std::string path) : key_(key_of(path)) {
  std::lock_guard<std::mutex> guard(registry_mutex());
  registry().insert(key_);
}

LiveTemporary::~LiveTemporary() {
  std::lock_guard<std::mutex> guard(registry_mutex());
  auto it = registry().find(key_);
  if (it != registry().end()) registry().erase(it);
}

bool is_live_temporary(const std::string& path) {
  const std::string key = key_of(path);
  std::lock_guard<std::mutex> guard(registry_mutex());
  return registry().count(key) > 0;
}

std::vector<std::string> remove_stale_temporaries(const DirectoryLock& lock) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(lock.directory(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_temporary_name(name) || is_live_temporary(entry.path().string())) continue;
    std::error_code remove_error;
    fs::remove_all(entry.path(), remove_error);
    if (remove_error) {
      throw IOError("cannot remove \"" + entry.path().string() + "\", left by an interrupted save: " +
                    remove_error.message() + " (remove it by hand)");
    }
    removed.push_back(name);
  }
  if (ec) throw IOError("cannot list \"" + lock.directory() + "\": " + ec.message());
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace syncgrad::io
