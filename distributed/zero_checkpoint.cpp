// Sharded ZeRO checkpoints: per-rank shard files plus a JSON index, and their re-assembly at any world size.
#include "distributed/zero_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "distributed/shard_layout.h"
#include "optim/optimizer_state_io.h"
#include "tensor/check.h"
#include "tensor/io/atomic_file.h"
#include "tensor/io/safetensors.h"

namespace syncgrad::optim {
namespace {

constexpr const char* kFormat = "syncgrad-zero-shards-1";

size_t mib_bytes(double mb) { return static_cast<size_t>(mb * 1024 * 1024); }

}  // namespace

std::string zero_shard_file_name(int rank, int world) {
  return "optimizer-shard-" + std::to_string(rank) + "-of-" + std::to_string(world) + ".safetensors";
}

void save_sharded_optimizer_state(const std::string& dir, const ZeroRedundancyOptimizer& zero) {
  distributed::ProcessGroup& group = zero.process_group();
  const int rank = group.rank(), world = group.size();
  const OptimizerStateDict local = zero.local_state_dict();
  io::save_safetensors(dir + "/" + zero_shard_file_name(rank, world), optimizer_tensors(local),
                       {{kOptimizerGroupsField, optimizer_groups_json(local)}});
  group.barrier()->wait();  // every shard file is complete before the index names it
  if (rank == 0) {
    nlohmann::json index;
    index["format"] = kFormat;
    index["world_size"] = world;
    std::vector<std::string> files;
    for (int r = 0; r < world; ++r) files.push_back(zero_shard_file_name(r, world));
    index["files"] = files;
    index["first_bucket_mb"] = zero.zero_options().first_bucket_mb;
    index["bucket_cap_mb"] = zero.zero_options().bucket_cap_mb;
    index["param_numels"] = zero.layout().param_numels();
    const std::string text = index.dump(1) + "\n";
    io::AtomicFileWriter writer(dir + "/" + kZeroShardIndexFileName);
    writer.write(text.data(), text.size());
    writer.commit();
  }
  group.barrier()->wait();  // nobody reads the save before the index exists
}

OptimizerStateDict read_sharded_optimizer_state(const std::string& dir, const std::vector<Tensor>& params) {
  const std::string index_path = dir + "/" + kZeroShardIndexFileName;
  std::ifstream in(index_path);
  SYNCGRAD_CHECK(in.good(), ValueError, index_path, ": no sharded optimizer index here (was the state saved with "
                 "save_sharded_optimizer_state?)");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json index;
  int world = 0;
  std::vector<std::string> files;
  std::vector<int64_t> numels;
  double first_mb = 0, cap_mb = 0;
  try {
    index = nlohmann::json::parse(text.str());
    SYNCGRAD_CHECK(index.value("format", "") == kFormat, ValueError, index_path, ": format '",
                   index.value("format", ""), "', expected '", kFormat, "'");
    world = index.at("world_size").get<int>();
    files = index.at("files").get<std::vector<std::string>>();
    numels = index.at("param_numels").get<std::vector<int64_t>>();
    first_mb = index.at("first_bucket_mb").get<double>();
    cap_mb = index.at("bucket_cap_mb").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(index_path + ": malformed sharded optimizer index (" + e.what() + ")");
  }
  SYNCGRAD_CHECK(world >= 1 && static_cast<int>(files.size()) == world && first_mb > 0 && cap_mb > 0, ValueError,
                 index_path, ": malformed sharded optimizer index (world_size ", world, ", ", files.size(),
                 " files)");
  std::vector<int64_t> mine;
  for (const Tensor& p : params) mine.push_back(p.numel());
  SYNCGRAD_CHECK(mine == numels, ValueError, index_path, ": saved for ", numels.size(),
                 " parameters of other sizes than the optimizer's ", mine.size(), "; it belongs to another model");

  const distributed::ShardLayout layout(params, world, mib_bytes(first_mb), mib_bytes(cap_mb));
  std::vector<OptimizerStateDict> shards;
  ZeroStateNames names;
  std::set<std::string> buffers;
  for (const std::string& file : files) {
    const std::string path = dir + "/" + file;
    SYNCGRAD_CHECK(std::filesystem::exists(path), ValueError, path, ": the shard file the index ", index_path,
                   " lists is missing");
    const io::SafetensorsContents contents = io::load_safetensors(path);
    auto groups = contents.metadata.find(kOptimizerGroupsField);
    SYNCGRAD_CHECK(groups != contents.metadata.end(), ValueError, path, ": no '", kOptimizerGroupsField,
                   "' metadata");
    shards.push_back(optimizer_state_from(contents.tensors, groups->second, path));
    for (const auto& [key, value] : shards.back().tensors) {
      const std::string name = key.substr(key.find('.', 6) + 1);
      if (name == "step") {
        names.counts_steps = true;
      } else {
        buffers.insert(name);
      }
    }
  }
  names.buffers.assign(buffers.begin(), buffers.end());
  SYNCGRAD_CHECK(shards[0].groups.size() == 1, ValueError, dir, "/", files[0], ": ", shards[0].groups.size(),
                 " parameter groups; a ZeroRedundancyOptimizer has one");
  std::map<std::string, double> options = shards[0].groups[0];
  options.erase("params");
  return assemble_zero_state(layout, shards, options, params, names);
}

void load_sharded_optimizer_state(const std::string& dir, ZeroRedundancyOptimizer& zero) {
  zero.load_state_dict(read_sharded_optimizer_state(dir, zero.param_groups().front().params));
}

}  // namespace syncgrad::optim
