// The text a GPT trains on: one file, or every plain-text file of a directory concatenated in name order
// (Debian's fortunes package, the default, keeps a .dat index and a .u8 symlink beside each text file: both
// are skipped).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace syncgrad::train {

// Where Debian's `fortunes` package installs its English text.
inline constexpr const char* kDefaultTextPath = "/usr/share/games/fortunes";

struct TextCorpus {
  std::string bytes;               // the concatenated contents
  std::vector<std::string> files;  // what was read, in order
};

// Reads `path`: a regular file, or a directory's regular files (not symlinks, not names ending in .dat or
// starting with '.') in sorted order. IOError naming the path when it is missing, unreadable or holds no
// text, with how to get the default text (apt-get install fortunes) or to pass --data-dir.
TextCorpus read_text_corpus(const std::string& path);

}  // namespace syncgrad::train
