// Reading a text file or a directory of them for the text task.
#include "tools/train/text_corpus.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tensor/check.h"
#include "tensor/errors.h"

namespace syncgrad::train {
namespace {

namespace fs = std::filesystem;

std::string where_to_get_text(const std::string& path) {
  return path == kDefaultTextPath
             ? "; install Debian's fortunes package (apt-get install fortunes) or pass --data-dir with a text file "
               "or a directory of text files"
             : "; pass --data-dir with a text file or a directory of text files";
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / 1048576.0);
  return text;
}

[[noreturn]] void too_large(const std::string& file, const std::string& what, uint64_t max_bytes) {
  throw ValueError("--dataset text: \"" + file + "\" " + what + ", over the limit of " + std::to_string(max_bytes) +
                   " bytes (" + mib(max_bytes) + ") that a text corpus may have (it is held in memory, 8 bytes "
                   "per token); pass a smaller text file or a directory of them");
}

// Appends `file` to `bytes`, never past `max_bytes` in all: a regular file's size is checked before reading,
// anything else (a pipe, a device such as /dev/zero) is read until it ends or passes the limit.
void append_file(const fs::path& file, std::string& bytes, uint64_t max_bytes) {
  std::error_code ec;
  const bool regular = fs::is_regular_file(file, ec);
  const uint64_t before = bytes.size();
  if (regular) {
    const uint64_t size = fs::file_size(file, ec);
    if (!ec && before + size > max_bytes) {
      too_large(file.string(), "has " + std::to_string(size) + " bytes" +
                                   (before > 0 ? " (" + std::to_string(before) + " read before it)" : ""),
                max_bytes);
    }
  }
  std::ifstream in(file, std::ios::binary);
  SYNCGRAD_CHECK(in, IOError, "--dataset text: cannot read \"", file.string(), "\"");
  std::vector<char> chunk(1u << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<uint64_t>(in.gcount());
    if (bytes.size() + got > max_bytes) {
      too_large(file.string(), "gave more than " + std::to_string(max_bytes - before) + " bytes" +
                                   (regular ? "" : " and did not end (not a regular file: a device or a pipe?)"),
                max_bytes);
    }
    bytes.append(chunk.data(), static_cast<size_t>(got));
  }
  SYNCGRAD_CHECK(in.eof(), IOError, "--dataset text: cannot read \"", file.string(), "\"");
}

bool is_text_file(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  return !entry.is_symlink() && entry.is_regular_file() && !name.starts_with(".") && !name.ends_with(".dat");
}

}  // namespace

TextCorpus read_text_corpus(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  SYNCGRAD_CHECK(!ec && fs::exists(status), IOError, "--dataset text: \"", path, "\" does not exist",
                 where_to_get_text(path));
  TextCorpus corpus;
  if (fs::is_directory(status)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
      if (is_text_file(entry)) corpus.files.push_back(entry.path().string());
    }
    SYNCGRAD_CHECK(!ec, IOError, "--dataset text: cannot list \"", path, "\": ", ec.message());
    std::sort(corpus.files.begin(), corpus.files.end());
  } else {
    corpus.files.push_back(path);
  }
  for (const std::string& file : corpus.files) append_file(file, corpus.bytes, max_bytes);
  SYNCGRAD_CHECK(!corpus.bytes.empty(), IOError, "--dataset text: \"", path, "\" holds no text (", corpus.files.size(),
                 " file(s) read, .dat files and symlinks skipped)", where_to_get_text(path));
  return corpus;
}

}  // namespace syncgrad::train
