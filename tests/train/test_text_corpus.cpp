// The text corpus reader's cap (tools/train/text_corpus.h): an endless file such as /dev/zero, a regular file
// over the limit, and a directory whose files together pass it are refused naming the file, the bytes and the
// limit, without reading past the limit; a corpus within the limit reads whole.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tensor/errors.h"
#include "tests/check_error.h"
#include "tools/train/text_corpus.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

namespace fs = std::filesystem;

struct CorpusDir {
  fs::path path = fs::temp_directory_path() / ("syncgrad-text-corpus-" + std::to_string(getpid()));
  CorpusDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~CorpusDir() { fs::remove_all(path); }
  std::string write(const std::string& name, size_t bytes) const {
    const std::string file = (path / name).string();
    std::ofstream(file, std::ios::binary) << std::string(bytes, 'a');
    return file;
  }
};

}  // namespace

TEST_CASE("read_text_corpus refuses an endless file at the limit, naming it") {
  if (!fs::exists("/dev/zero")) return;
  check_error<ValueError>([] { train::read_text_corpus("/dev/zero", 1u << 20); },
                          {"\"/dev/zero\" gave more than 1048576 bytes and did not end", "limit of 1048576 bytes"});
}

TEST_CASE("read_text_corpus refuses a file or a directory over the limit before reading it") {
  CorpusDir dir;
  const std::string big = dir.write("big.txt", 5000);
  check_error<ValueError>([&] { train::read_text_corpus(big, 4096); },
                          {"\"" + big + "\" has 5000 bytes, over the limit of 4096 bytes"});
  fs::remove(big);
  dir.write("a.txt", 3000);
  const std::string b = dir.write("b.txt", 3000);
  check_error<ValueError>([&] { train::read_text_corpus(dir.path.string(), 4096); },
                          {"\"" + b + "\" has 3000 bytes (3000 read before it), over the limit of 4096"});
  const train::TextCorpus corpus = train::read_text_corpus(dir.path.string(), 6000);
  CHECK(corpus.bytes.size() == 6000);
  CHECK(corpus.files.size() == 2);
  CHECK(train::kMaxTextCorpusBytes == 256u << 20);
}
