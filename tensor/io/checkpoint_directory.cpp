// Writing, verifying, finding and pruning checkpoint directories (see checkpoint_directory.h).
#include "tensor/io/checkpoint_directory.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "tensor/check.h"
#include "tensor/io/atomic_file.h"

namespace syncgrad::io {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifestFormat = "syncgrad-checkpoint-manifest/1";
constexpr const char* kStepPrefix = "step-";

std::string os_reason(int error_number) { return std::system_category().message(error_number); }

std::string join(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

// Size and CRC32 of a whole file, read in 4 MiB pieces.
ManifestEntry measure(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  SYNCGRAD_CHECK(in, IOError, "checkpoint: cannot read \"", path, "\"");
  std::vector<char> buffer(4u << 20);
  ManifestEntry entry{name, 0, static_cast<uint32_t>(::crc32(0L, Z_NULL, 0))};
  uLong crc = entry.crc32;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(got));
    entry.bytes += static_cast<uint64_t>(got);
  }
  SYNCGRAD_CHECK(in.eof(), IOError, "checkpoint: reading \"", path, "\" failed");
  entry.crc32 = static_cast<uint32_t>(crc);
  return entry;
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) {
    const int error_number = errno;
    throw IOError("checkpoint: cannot open \"" + path + "\" to fsync it: " + os_reason(error_number));
  }
  const int rc = ::fsync(fd);
  const int error_number = errno;
  ::close(fd);
  SYNCGRAD_CHECK(rc == 0, IOError, "checkpoint: fsync of \"", path, "\" failed: ", os_reason(error_number));
}

std::string manifest_json(int64_t step, const std::vector<ManifestEntry>& files) {
  nlohmann::json list = nlohmann::json::array();
  for (const ManifestEntry& f : files) list.push_back({{"name", f.name}, {"bytes", f.bytes}, {"crc32", hex32(f.crc32)}});
  return nlohmann::json{{"format", kManifestFormat}, {"step", step}, {"files", list}}.dump(1) + "\n";
}

Manifest parse_manifest(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw CorruptCheckpointError(file + ": missing: the checkpoint is incomplete (a save that was interrupted?)");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Manifest manifest;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const std::string format = j.at("format").get<std::string>();
    if (format != kManifestFormat) {
      throw CorruptCheckpointError(file + ": format \"" + format + "\" is not " + kManifestFormat +
                                   " (written by another version?)");
    }
    manifest.step = j.at("step").get<int64_t>();
    for (const nlohmann::json& f : j.at("files")) {
      const std::string crc = f.at("crc32").get<std::string>();
      size_t used = 0;
      const unsigned long value = std::stoul(crc, &used, 16);
      if (used != crc.size() || crc.size() != 8) throw std::invalid_argument("crc32");
      manifest.files.push_back({f.at("name").get<std::string>(), f.at("bytes").get<uint64_t>(),
                                static_cast<uint32_t>(value)});
    }
  } catch (const nlohmann::json::exception& e) {
    throw CorruptCheckpointError(file + ": not a valid manifest (" + e.what() + ")");
  } catch (const std::logic_error&) {
    throw CorruptCheckpointError(file + ": a crc32 is not 8 hexadecimal digits");
  }
  return manifest;
}

// Moves `from` to `to`, atomically replacing a directory already at `to`; the replaced one ends at `from`.
// Returns whether something was replaced.
bool rename_exchanging(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return false;
  if (errno != ENOTEMPTY && errno != EEXIST) {
    const int error_number = errno;
    throw IOError("checkpoint: cannot rename \"" + from + "\" to \"" + to + "\": " + os_reason(error_number));
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) != 0) {
    const int error_number = errno;
    throw IOError("checkpoint: cannot replace \"" + to + "\" (a checkpoint of the same step): " +
                  os_reason(error_number) + "; move it away and save again");
  }
  return true;
}

void point_latest_at(const std::string& root, const std::string& name) {
  const std::string link = join(root, kLatestLinkName);
  std::error_code ec;
  // A `latest` that is not a symlink is someone else's: left alone.
  if (fs::exists(fs::symlink_status(link, ec)) && !fs::is_symlink(fs::symlink_status(link, ec))) return;
  const std::string temp = temporary_name_for(link);
  LiveTemporary live(temp);
  fs::create_directory_symlink(name, temp, ec);
  if (!ec) fs::rename(temp, link, ec);
  if (ec) {
    fs::remove(temp);
    throw IOError("checkpoint: cannot point \"" + link + "\" at " + name + ": " + ec.message());
  }
}

bool sizes_match(const std::string& dir) {
  try {
    verify_checkpoint(dir, false);
    return true;
  } catch (const CorruptCheckpointError&) {
    return false;
  }
}

}  // namespace

std::string checkpoint_directory_name(int64_t step) {
  char text[32];
  std::snprintf(text, sizeof text, "%s%06lld", kStepPrefix, static_cast<long long>(step));
  return text;
}

std::optional<int64_t> step_of_directory_name(const std::string& name) {
  const std::string prefix = kStepPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 || name.size() > prefix.size() + 18) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

CheckpointWriter::CheckpointWriter(const DirectoryLock& root, int64_t step) : root_(root.directory()), step_(step) {
  SYNCGRAD_CHECK(step >= 0, ValueError, "checkpoint: step must be >= 0, got ", step);
  remove_stale_temporaries(root);
  temp_dir_ = temporary_name_for(join(root_, checkpoint_directory_name(step)));
  live_ = std::make_unique<LiveTemporary>(temp_dir_);
  std::error_code ec;
  fs::create_directory(temp_dir_, ec);
  if (ec) {
    throw IOError("checkpoint: cannot create \"" + temp_dir_ + "\": " + ec.message() +
                  " (is the directory writable, is the disk full?)");
  }
}

CheckpointWriter::~CheckpointWriter() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(temp_dir_, ec);  // failing leaves debris that the next save removes
}

std::string CheckpointWriter::path_of(const std::string& file_name) const { return join(temp_dir_, file_name); }

std::string CheckpointWriter::commit() {
  SYNCGRAD_CHECK(!committed_, ValueError, "checkpoint: ", temp_dir_, " was committed already");
  std::vector<ManifestEntry> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(temp_dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name == kManifestFileName || is_temporary_name(name)) continue;
    files.push_back(measure(entry.path().string(), name));
    fsync_path(entry.path().string(), O_RDONLY);
  }
  SYNCGRAD_CHECK(!ec, IOError, "checkpoint: cannot list \"", temp_dir_, "\": ", ec.message());
  std::sort(files.begin(), files.end(), [](const ManifestEntry& a, const ManifestEntry& b) { return a.name < b.name; });
  const std::string manifest = manifest_json(step_, files);
  AtomicFileWriter writer(path_of(kManifestFileName));  // fsyncs the file and the temporary directory
  writer.write(manifest.data(), manifest.size());
  writer.commit();

  const std::string name = checkpoint_directory_name(step_);
  const std::string final_dir = join(root_, name);
  const bool replaced = rename_exchanging(temp_dir_, final_dir);
  committed_ = true;
  if (replaced) {
    // temp_dir_ now holds the older checkpoint of this step; failing to remove it leaves debris for the next save.
    std::error_code remove_error;
    fs::remove_all(temp_dir_, remove_error);
  }
  fsync_path(root_, O_RDONLY | O_DIRECTORY);
  if (list_checkpoints(root_).back() == final_dir) point_latest_at(root_, name);  // the newest step
  return final_dir;
}

Manifest verify_checkpoint(const std::string& dir, bool check_contents) {
  Manifest manifest = parse_manifest(join(dir, kManifestFileName));
  const std::optional<int64_t> named_step = step_of_directory_name(fs::path(dir).lexically_normal().filename().string());
  if (named_step && *named_step != manifest.step) {
    throw CorruptCheckpointError(join(dir, kManifestFileName) + ": step " + std::to_string(manifest.step) +
                                 ", but the directory is named for step " + std::to_string(*named_step) +
                                 " (renamed by hand?)");
  }
  for (const ManifestEntry& expected : manifest.files) {
    const std::string file = join(dir, expected.name);
    std::error_code ec;
    const uint64_t bytes = fs::file_size(file, ec);
    if (ec) throw CorruptCheckpointError(file + ": listed in the manifest but " + ec.message());
    if (bytes != expected.bytes) {
      throw CorruptCheckpointError(file + ": " + std::to_string(bytes) + " bytes, the manifest says " +
                                   std::to_string(expected.bytes) + " (truncated or replaced?)");
    }
    if (!check_contents) continue;
    const ManifestEntry actual = measure(file, expected.name);
    if (actual.crc32 != expected.crc32) {
      throw CorruptCheckpointError(file + ": CRC32 " + hex32(actual.crc32) + ", the manifest says " +
                                   hex32(expected.crc32) + " (the file is damaged)");
    }
  }
  return manifest;
}

std::vector<std::string> list_checkpoints(const std::string& root) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    const std::optional<int64_t> step = step_of_directory_name(entry.path().filename().string());
    if (step && entry.is_directory() && !entry.is_symlink()) found.emplace_back(*step, entry.path().string());
  }
  SYNCGRAD_CHECK(!ec, IOError, "checkpoint: cannot list \"", root, "\": ", ec.message());
  std::sort(found.begin(), found.end());
  std::vector<std::string> dirs;
  for (auto& [step, dir] : found) dirs.push_back(std::move(dir));
  return dirs;
}

std::optional<std::string> newest_complete_checkpoint(const std::string& root, std::vector<std::string>* skipped) {
  const std::vector<std::string> dirs = list_checkpoints(root);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    try {
      verify_checkpoint(*it);
      return *it;
    } catch (const CorruptCheckpointError& e) {
      if (skipped) skipped->push_back(e.what());
    }
  }
  return std::nullopt;
}

std::vector<std::string> prune_checkpoints(const DirectoryLock& root, int keep) {
  SYNCGRAD_CHECK(keep >= 1, ValueError, "checkpoint: keep must be >= 1 (the newest checkpoint stays), got ", keep);
  const std::vector<std::string> dirs = list_checkpoints(root.directory());
  int complete = 0;
  size_t oldest_kept = dirs.size();
  for (size_t i = dirs.size(); i-- > 0 && complete < keep;) {
    if (sizes_match(dirs[i])) {
      ++complete;
      oldest_kept = i;
    }
  }
  std::vector<std::string> removed;
  if (complete < keep) return removed;  // fewer complete ones than asked to keep: nothing is old enough
  for (size_t i = 0; i < oldest_kept; ++i) {
    std::error_code ec;
    fs::remove_all(dirs[i], ec);
    if (ec) throw IOError("checkpoint: cannot remove the old checkpoint \"" + dirs[i] + "\": " + ec.message());
    removed.push_back(dirs[i]);
  }
  return removed;
}

}  // namespace syncgrad::io
