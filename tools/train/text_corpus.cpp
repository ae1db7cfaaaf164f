// Reading a text file or a directory of them for the text task.
#include "tools/train/text_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

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

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SYNCGRAD_CHECK(in.good() || in.eof(), IOError, "--dataset text: cannot read \"", file.string(), "\"");
  return bytes;
}

bool is_text_file(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  return !entry.is_symlink() && entry.is_regular_file() && !name.starts_with(".") && !name.ends_with(".dat");
}

}  // namespace

TextCorpus read_text_corpus(const std::string& path) {
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
  for (const std::string& file : corpus.files) corpus.bytes += read_file(file);
  SYNCGRAD_CHECK(!corpus.bytes.empty(), IOError, "--dataset text: \"", path, "\" holds no text (", corpus.files.size(),
                 " file(s) read, .dat files and symlinks skipped)", where_to_get_text(path));
  return corpus;
}

}  // namespace syncgrad::train
