// The text a GPT trains on: one file, or every plain-text file of a directory concatenated in name order
// (Debian's fortunes package, the default, keeps a .dat index and a .u8 symlink beside each text file: both
// are skipped). The corpus is held in memory (and as one int64 token per byte), so it is capped at
// kMaxTextCorpusBytes: a larger file, or an endless one such as /dev/zero or a pipe that never ends, is refused
// without reading more than the cap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace syncgrad::train {

// Where Debian's `fortunes` package installs its English text.
inline constexpr const char* kDefaultTextPath = "/usr/share/games/fortunes";

// 256 MiB of text: 2 GiB as int64 tokens.
inline constexpr uint64_t kMaxTextCorpusBytes = uint64_t{256} << 20;

struct TextCorpus {
  std::string bytes;               // the concatenated contents
  std::vector<std::string> files;  // what was read, in order
};

// Reads `path`: a regular file, or a directory's regular files (not symlinks, not names ending in .dat or
// starting with '.') in sorted order, or another readable file (a pipe, a device) up to `max_bytes`. IOError
// naming the path when it is missing, unreadable or holds no text, with how to get the default text (apt-get
// install fortunes) or to pass --data-dir; ValueError naming the file, the bytes read and the limit when the
// corpus would exceed `max_bytes`.
TextCorpus read_text_corpus(const std::string& path, uint64_t max_bytes = kMaxTextCorpusBytes);

}  // namespace syncgrad::train
