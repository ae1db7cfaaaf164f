// Checkpoints as directories, one per saved step, each complete only when its manifest exists:
//
//   ROOT/                          e.g. syncgrad-train's --checkpoint-dir
//     .lock                        the DirectoryLock of the one process that writes here (directory_lock.h)
//     step-000100/                 a complete checkpoint: its files and manifest.json, written last
//     step-000200/
//     latest -> step-000200        a symlink to the newest complete checkpoint, for people and Python tools
//                                  (a `latest` that is not a symlink is left alone)
//     step-000300.tmp.<pid>.<n>/   a save in progress, or the debris of a killed one
//
// manifest.json lists every file of the checkpoint with its size and CRC32:
//   {"format": "syncgrad-checkpoint-manifest/1", "step": 200,
//    "files": [{"name": "model.safetensors", "bytes": 1234, "crc32": "89abcdef"}, ...]}
//
// A save writes its files into a temporary sibling directory, lists them in the manifest, fsyncs, and renames
// the directory into place in one step (an existing directory of the same step is swapped out atomically, then
// removed), so a directory under its final name is always complete, and older checkpoints are never touched
// while a new one is written. The writer holds ROOT's DirectoryLock; its next save removes what a killed save
// left behind (temporary_files.h), and pruning to the newest K runs only after the new checkpoint is in place.
//
//   io::DirectoryLock lock(root, "--checkpoint-dir");
//   io::CheckpointWriter writer(lock, step);
//   io::save_safetensors(writer.path_of("model.safetensors"), tensors);
//   std::string dir = writer.commit();       // ROOT/step-000123
//   io::prune_checkpoints(lock, 2);
//
//   std::optional<std::string> dir = io::newest_complete_checkpoint(root, &warnings);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensor/errors.h"
#include "tensor/io/directory_lock.h"
#include "tensor/io/temporary_files.h"

namespace syncgrad::io {

// A checkpoint directory that is incomplete or damaged; the message names the file and what is wrong.
class CorruptCheckpointError : public ValueError {
 public:
  using ValueError::ValueError;
};

inline constexpr const char* kManifestFileName = "manifest.json";
inline constexpr const char* kLatestLinkName = "latest";

struct ManifestEntry {
  std::string name;  // a file directly inside the checkpoint directory
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct Manifest {
  int64_t step = 0;
  std::vector<ManifestEntry> files;
};

// "step-000123" (at least six digits).
std::string checkpoint_directory_name(int64_t step);
// The step of a name of that form; none for any other name.
std::optional<int64_t> step_of_directory_name(const std::string& name);

class CheckpointWriter {
 public:
  // Removes the stale temporaries in the locked root (the debris of a killed save) and creates a temporary
  // directory for checkpoint `step` (>= 0). IOError naming the path when it cannot.
  CheckpointWriter(const DirectoryLock& root, int64_t step);
  // Removes the temporary directory unless commit() succeeded.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Where to write `file_name` of the checkpoint (inside the temporary directory).
  std::string path_of(const std::string& file_name) const;

  // Lists the files written (sizes and CRC32s) in the manifest, fsyncs them and the directory, renames it to
  // ROOT/step-NNNNNN, points `latest` at it (when no newer step is there) and returns its path.
  std::string commit();

 private:
  std::string root_;
  int64_t step_;
  std::string temp_dir_;
  std::unique_ptr<LiveTemporary> live_;
  bool committed_ = false;
};

// Checks `dir`'s manifest and that every file it lists has its size and (with check_contents) its CRC32;
// returns the manifest. CorruptCheckpointError naming the file and the reason (no manifest: an interrupted
// save; a size or checksum that differs: truncated or damaged).
Manifest verify_checkpoint(const std::string& dir, bool check_contents = true);

// The step-NNNNNN directories of `root` (complete or not), by step, oldest first.
std::vector<std::string> list_checkpoints(const std::string& root);

// The newest checkpoint of `root` that verifies; each newer one that does not is skipped, and its reason
// ("ROOT/step-000300/model.safetensors: 100 bytes, the manifest says 200 (truncated?)") appended to
// `skipped` when given. None when no checkpoint verifies.
std::optional<std::string> newest_complete_checkpoint(const std::string& root,
                                                      std::vector<std::string>* skipped = nullptr);

// Keeps the newest `keep` (>= 1) complete checkpoints of the locked root and removes every checkpoint older
// than the oldest of them; newer incomplete ones stay for inspection. Returns the removed directories.
std::vector<std::string> prune_checkpoints(const DirectoryLock& root, int keep);

}  // namespace syncgrad::io
