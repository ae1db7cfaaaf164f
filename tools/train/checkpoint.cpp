// Checkpoint save/load on top of the safetensors format.
#include "tools/train/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tensor/check.h"
#include "tensor/io/safetensors.h"

namespace syncgrad::train {
namespace {

constexpr const char* kFormat = "syncgrad-checkpoint/1";
const std::string kGradScalerPrefix = "grad_scaler.";
constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kCheckpointFile = "checkpoint.safetensors";

std::string join(const std::string& dir, const char* file) { return (std::filesystem::path(dir) / file).string(); }

std::string groups_to_json(const std::vector<std::map<std::string, double>>& groups) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& g : groups) j.push_back(g);
  return j.dump();
}

std::vector<std::map<std::string, double>> groups_from_json(const std::string& text) {
  std::vector<std::map<std::string, double>> groups;
  for (const auto& g : nlohmann::json::parse(text)) groups.push_back(g.get<std::map<std::string, double>>());
  return groups;
}

const std::string& require(const std::map<std::string, std::string>& metadata, const std::string& key,
                           const std::string& file) {
  auto it = metadata.find(key);
  SYNCGRAD_CHECK(it != metadata.end(), ValueError, "checkpoint ", file, ": metadata field \"", key,
                 "\" is missing; the file was not written by syncgrad-train (use --init-from for plain weights)");
  return it->second;
}

}  // namespace

void ensure_writable_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SYNCGRAD_CHECK(!ec, IOError, "--checkpoint-dir: cannot create \"", dir, "\": ", ec.message(),
                 "; choose a writable directory");
  std::string probe = join(dir, ".syncgrad-write-probe");
  {
    std::ofstream out(probe);
    SYNCGRAD_CHECK(out && out << "ok" && out.flush(), IOError, "--checkpoint-dir: \"", dir,
                   "\" is not writable; choose a writable directory");
  }
  std::filesystem::remove(probe, ec);
}

void save_checkpoint(const std::string& dir, const std::string& model_name, const nn::Module& model,
                     const optim::Optimizer& optimizer, const TrainingPosition& position, const TrainConfig& config) {
  nn::StateDict weights = model.state_dict();
  optim::OptimizerStateDict opt_state = optimizer.state_dict();
  io::NamedTensors all;
  for (const auto& [name, t] : weights) all.emplace_back("model." + name, t);
  for (const auto& [name, t] : opt_state.tensors) all.emplace_back("optimizer." + name, t);
  std::map<std::string, std::string> metadata = {
      {"format", kFormat},
      {"model", model_name},
      {"epoch", std::to_string(position.epoch)},
      {"batch_in_epoch", std::to_string(position.batch_in_epoch)},
      {"step", std::to_string(position.step)},
      {"rng_seed", std::to_string(position.rng_seed)},
      {"rng_offset", std::to_string(position.rng_offset)},
      {"optimizer_groups", groups_to_json(opt_state.groups)},
      {"config", config.to_json()},
  };
  for (const auto& [key, value] : position.grad_scaler) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    metadata.emplace(kGradScalerPrefix + key, text);
  }
  io::save_safetensors(join(dir, kCheckpointFile), all, metadata);
  io::save_safetensors(join(dir, kModelFile), weights, {{"format", "pt"}, {"model", model_name}});
}

TrainingPosition load_checkpoint(const std::string& path, const std::string& model_name, nn::Module& model,
                                 optim::Optimizer& optimizer) {
  std::string file = std::filesystem::is_directory(path) ? join(path, kCheckpointFile) : path;
  io::SafetensorsContents contents = io::load_safetensors(file);
  const auto& meta = contents.metadata;
  SYNCGRAD_CHECK(require(meta, "format", file) == kFormat, ValueError, "checkpoint ", file, ": format \"",
                 meta.at("format"), "\" is not ", kFormat);
  SYNCGRAD_CHECK(require(meta, "model", file) == model_name, ValueError, "checkpoint ", file, " holds a \"",
                 meta.at("model"), "\" model but --model is \"", model_name, "\"; pass --model ", meta.at("model"),
                 " or another checkpoint");
  nn::StateDict weights;
  optim::OptimizerStateDict opt_state;
  for (const auto& [name, t] : contents.tensors) {
    if (name.rfind("model.", 0) == 0) weights.emplace_back(name.substr(6), t);
    else if (name.rfind("optimizer.", 0) == 0) opt_state.tensors.emplace_back(name.substr(10), t);
    else throw ValueError("checkpoint " + file + ": unexpected tensor \"" + name + "\"");
  }
  io::check_state_matches(model.state_dict(), weights, file);
  model.load_state_dict(weights, true);
  opt_state.groups = groups_from_json(require(meta, "optimizer_groups", file));
  optimizer.load_state_dict(opt_state);
  TrainingPosition position;
  try {
    position.epoch = std::stoi(require(meta, "epoch", file));
    position.batch_in_epoch = std::stoll(require(meta, "batch_in_epoch", file));
    position.step = std::stoll(require(meta, "step", file));
    position.rng_seed = std::stoull(require(meta, "rng_seed", file));
    position.rng_offset = std::stoull(require(meta, "rng_offset", file));
    for (const auto& [key, value] : meta) {
      if (key.rfind(kGradScalerPrefix, 0) == 0) {
        position.grad_scaler[key.substr(kGradScalerPrefix.size())] = std::stod(value);
      }
    }
  } catch (const std::logic_error&) {
    throw ValueError("checkpoint " + file + ": the training position in its metadata is not a number");
  }
  return position;
}

void load_weights(const std::string& file, nn::Module& model) {
  io::SafetensorsContents contents = io::load_safetensors(file);
  nn::consume_prefix_if_present(contents.tensors, "module.");  // saved from a DDP wrapper (PyTorch's too)
  io::check_state_matches(model.state_dict(), contents.tensors, file);
  model.load_state_dict(contents.tensors, true);
}

}  // namespace syncgrad::train
