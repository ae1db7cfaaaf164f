// Checkpoint directories (tensor/io/checkpoint_directory.h): a commit renames a complete directory with its
// manifest into place and points `latest` at it; an uncommitted writer leaves nothing; the debris of a killed
// save (temporaries of no live writer) is removed by the next writer while a live one's stays; verification
// names the file of a missing manifest, a truncated or a damaged file; the newest complete checkpoint skips
// damaged newer ones; pruning keeps the newest K complete ones; a second save of one step replaces it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "tensor/io/checkpoint_directory.h"
#include "tests/io/io_test_util.h"

using namespace syncgrad;
using syncgrad::testing::contains;
using syncgrad::testing::message_of;
using syncgrad::testing::TempDir;

namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string save(const io::DirectoryLock& lock, int64_t step, const std::string& text = "weights") {
  io::CheckpointWriter writer(lock, step);
  write_text(writer.path_of("model.bin"), text + std::to_string(step));
  write_text(writer.path_of("state.bin"), "state" + std::to_string(step));
  return writer.commit();
}

}  // namespace

TEST_CASE("CheckpointWriter: a commit puts a complete directory in place; no commit leaves nothing") {
  TempDir root;
  io::DirectoryLock lock(root.path());
  const std::string dir = save(lock, 7);
  CHECK(dir == root.file("step-000007"));
  CHECK(fs::read_symlink(root.file("latest")) == "step-000007");
  const io::Manifest manifest = io::verify_checkpoint(dir);
  CHECK(manifest.step == 7);
  REQUIRE(manifest.files.size() == 2);
  CHECK(manifest.files[0].name == "model.bin");
  CHECK(manifest.files[0].bytes == 8);
  {
    io::CheckpointWriter abandoned(lock, 8);
    write_text(abandoned.path_of("model.bin"), "half");
  }
  CHECK(root.entries() == std::vector<std::string>{".lock", "latest", "step-000007"});
}

TEST_CASE("CheckpointWriter: the next save removes a killed save's debris, never a live writer's temporary") {
  TempDir root;
  io::DirectoryLock lock(root.path());
  fs::create_directory(root.file("step-000003.tmp.4242.0"));  // a save killed while writing
  write_text(root.file("step-000003.tmp.4242.0/model.bin"), "half");
  write_text(root.file("model.safetensors.tmp.4242.1"), "half");  // an AtomicFileWriter's
  write_text(root.file("notes.txt"), "mine");
  CHECK(io::remove_stale_temporaries(lock) ==
        std::vector<std::string>{"model.safetensors.tmp.4242.1", "step-000003.tmp.4242.0"});
  fs::create_directory(root.file("step-000004.tmp.4243.0"));
  io::CheckpointWriter live(lock, 5);  // removes that one first
  CHECK(!fs::exists(root.file("step-000004.tmp.4243.0")));
  write_text(live.path_of("model.bin"), "being written");
  CHECK(io::remove_stale_temporaries(lock).empty());
  CHECK(fs::exists(live.path_of("model.bin")));
  CHECK(fs::exists(root.file("notes.txt")));
  save(lock, 6);  // a second writer of this process leaves the first's temporary alone too
  CHECK(fs::exists(live.path_of("model.bin")));
  CHECK(live.commit() == root.file("step-000005"));
}

TEST_CASE("verify_checkpoint names the file and the reason") {
  TempDir root;
  io::DirectoryLock lock(root.path());
  const std::string dir = save(lock, 1);
  write_text(dir + "/state.bin", "state2");  // same size, other bytes
  CHECK(contains(message_of<io::CorruptCheckpointError>([&] { io::verify_checkpoint(dir); }),
                 dir + "/state.bin: CRC32 "));
  CHECK_NOTHROW(io::verify_checkpoint(dir, false));  // sizes only
  fs::resize_file(dir + "/model.bin", 3);
  CHECK(contains(message_of<io::CorruptCheckpointError>([&] { io::verify_checkpoint(dir); }),
                 dir + "/model.bin: 3 bytes, the manifest says 8"));
  fs::remove(dir + "/model.bin");
  CHECK(contains(message_of<io::CorruptCheckpointError>([&] { io::verify_checkpoint(dir); }),
                 dir + "/model.bin: listed in the manifest but"));
  fs::rename(dir, root.file("step-000002"));
  CHECK(contains(message_of<io::CorruptCheckpointError>([&] { io::verify_checkpoint(root.file("step-000002")); }),
                 "manifest.json: step 1, but the directory is named for step 2"));
  fs::rename(root.file("step-000002"), dir);
  write_text(dir + "/manifest.json", "{\"format\": \"syncgrad-checkpoint-manifest/1\", \"step\": ");
  CHECK(contains(message_of<io::CorruptCheckpointError>([&] { io::verify_checkpoint(dir); }),
                 dir + "/manifest.json: not a valid manifest"));
  fs::remove(dir + "/manifest.json");
  CHECK(contains(message_of<io::CorruptCheckpointError>([&] { io::verify_checkpoint(dir); }),
                 dir + "/manifest.json: missing: the checkpoint is incomplete"));
}

TEST_CASE("newest_complete_checkpoint skips damaged newer ones; pruning keeps the newest complete ones") {
  TempDir root;
  io::DirectoryLock lock(root.path());
  CHECK(!io::newest_complete_checkpoint(root.path()));
  for (int64_t step : {10, 20, 30, 40}) save(lock, step);
  CHECK(io::list_checkpoints(root.path()).size() == 4);
  fs::resize_file(root.file("step-000040/model.bin"), 1);
  std::vector<std::string> skipped;
  CHECK(io::newest_complete_checkpoint(root.path(), &skipped) == root.file("step-000030"));
  REQUIRE(skipped.size() == 1);
  CHECK(contains(skipped[0], "step-000040/model.bin: 1 bytes"));
  CHECK(io::prune_checkpoints(lock, 2) == std::vector<std::string>{root.file("step-000010")});
  CHECK(root.entries() == std::vector<std::string>{".lock", "latest", "step-000020", "step-000030", "step-000040"});
  CHECK(contains(message_of<ValueError>([&] { io::prune_checkpoints(lock, 0); }), "keep must be >= 1"));
}

TEST_CASE("saving a step again replaces its directory in one rename") {
  TempDir root;
  io::DirectoryLock lock(root.path());
  save(lock, 5, "first");
  fs::remove(root.file("step-000005/manifest.json"));  // damaged
  save(lock, 5, "second");
  CHECK_NOTHROW(io::verify_checkpoint(root.file("step-000005")));
  CHECK(testing::read_bytes(root.file("step-000005/model.bin")).size() == std::string("second5").size());
  CHECK(root.entries() == std::vector<std::string>{".lock", "latest", "step-000005"});
}

TEST_CASE("checkpoint directory names") {
  CHECK(io::checkpoint_directory_name(123) == "step-000123");
  CHECK(io::checkpoint_directory_name(12345678) == "step-12345678");
  CHECK(io::step_of_directory_name("step-000123") == 123);
  CHECK(!io::step_of_directory_name("step-"));
  CHECK(!io::step_of_directory_name("step-12a"));
  CHECK(!io::step_of_directory_name("step-000123.tmp.1.2"));
  CHECK(io::is_temporary_name("step-000123.tmp.1.2"));
  CHECK(io::is_temporary_name("model.safetensors.tmp.99999.0"));
  CHECK(!io::is_temporary_name("model.safetensors"));
  CHECK(!io::is_temporary_name("a.tmp.x.1"));
}
