// Atomic checkpoint writes: failures (no directory, a regular file in place of the directory, a write cut off
// by the file-size limit, a tensor whose host copy throws) raise IOError/DeviceError, keep an existing file
// byte-for-byte and leave no temporary file behind; success replaces the old file.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <csignal>

#include "syncgrad.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::contains;
using syncgrad::testing::message_of;
using syncgrad::testing::TempDir;

namespace {

// Lowers the soft file-size limit (writes beyond it fail with EFBIG instead of killing the process) and
// restores the limit and the SIGXFSZ disposition on scope exit.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_handler_)(int) = SIG_DFL;
};

}  // namespace

TEST_CASE("atomic save into a missing directory is an IOError naming the path and the reason") {
  TempDir dir;
  std::string path = dir.file("no-such-dir/model.safetensors");
  std::string message = message_of<IOError>([&] { io::save_safetensors(path, {{"w", zeros({2})}}); });
  CAPTURE(message);
  CHECK(contains(message, path));
  CHECK(contains(message, "No such file or directory"));
  CHECK(dir.entries().empty());
}

TEST_CASE("atomic save under a regular file (fails even as root) is an IOError and creates nothing") {
  TempDir dir;
  std::string not_a_dir = dir.file("plain-file");
  syncgrad::testing::write_bytes(not_a_dir, {1, 2, 3});
  std::string path = not_a_dir + "/model.safetensors";
  std::string message = message_of<IOError>([&] { io::save_safetensors(path, {{"w", zeros({2})}}); });
  CAPTURE(message);
  CHECK(contains(message, path));
  CHECK(contains(message, "Not a directory"));
  CHECK(dir.entries() == std::vector<std::string>{"plain-file"});
  CHECK(syncgrad::testing::read_bytes(not_a_dir) == syncgrad::testing::Bytes{1, 2, 3});
}

TEST_CASE("a write that fails midway keeps the old file intact and removes the temporary file") {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, {{"old", tensor({1.f, 2.f, 3.f})}}, {{"version", "1"}});
  syncgrad::testing::Bytes old_bytes = syncgrad::testing::read_bytes(path);

  std::string message;
  {
    FileSizeLimit limit(4096);
    message = message_of<IOError>([&] { io::save_safetensors(path, {{"big", zeros({1 << 16})}}); });
  }
  CAPTURE(message);
  CHECK(contains(message, path));
  CHECK(contains(message, "write failed: File too large"));
  CHECK(syncgrad::testing::read_bytes(path) == old_bytes);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  io::SafetensorsContents still = io::load_safetensors(path);
  CHECK(still.metadata.at("version") == "1");
  CHECK(to_vector<float>(still.tensors.at(0).second) == std::vector<float>{1.f, 2.f, 3.f});
}

TEST_CASE("a tensor whose host copy throws aborts the save, keeps the old file and leaves no temporary file") {
  if (cuda_is_available()) {
    MESSAGE("SKIPPED: a CUDA backend is available, so a CUDA-labelled host buffer cannot be used to force a "
            "failing copy");
    return;
  }
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, {{"old", tensor({4.f})}});
  syncgrad::testing::Bytes old_bytes = syncgrad::testing::read_bytes(path);

  // A CUDA-labelled tensor over host memory: copying it to the host needs the (absent) CUDA backend.
  std::vector<float> host(4, 0.f);
  auto storage = std::make_shared<Storage>(host.data(), host.size() * sizeof(float), Device(DeviceType::kCUDA, 0),
                                           nullptr);
  Tensor on_cuda(std::make_shared<TensorImpl>(storage, DType::f32, Shape{4}, Shape{1}, 0));
  std::string message =
      message_of<DeviceError>([&] { io::save_safetensors(path, {{"first", tensor({1.f})}, {"cuda", on_cuda}}); });
  CAPTURE(message);
  CHECK(contains(message, "cuda"));
  CHECK(syncgrad::testing::read_bytes(path) == old_bytes);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("a successful save replaces an existing file") {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, {{"w", tensor({1.f})}});
  io::save_safetensors(path, {{"w", tensor({2.f, 3.f})}, {"b", tensor({4.f})}});
  io::SafetensorsContents loaded = io::load_safetensors(path);
  REQUIRE(loaded.tensors.size() == 2);
  CHECK(to_vector<float>(loaded.tensors[0].second) == std::vector<float>{2.f, 3.f});
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
}
