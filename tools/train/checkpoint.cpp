// Checkpoint save/load: the trainer's files in a checkpoint directory of tensor/io/checkpoint_directory.h.
#include "tools/train/checkpoint.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "optim/optimizer_state_io.h"
#include "tensor/check.h"
#include "tensor/io/checkpoint_directory.h"
#include "tensor/io/safetensors.h"

namespace syncgrad::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "syncgrad-checkpoint/2";
constexpr const char* kLegacyFormat = "syncgrad-checkpoint/1";
const std::string kGradScalerPrefix = "grad_scaler.";

std::string join(const std::string& dir, const char* file) { return (fs::path(dir) / file).string(); }

const std::string& require(const std::map<std::string, std::string>& metadata, const std::string& key,
                           const std::string& file) {
  auto it = metadata.find(key);
  SYNCGRAD_CHECK(it != metadata.end(), ValueError, "checkpoint ", file, ": metadata field \"", key,
                 "\" is missing; the file was not written by syncgrad-train (use --init-from for plain weights)");
  return it->second;
}

// "SYNCGRAD_TEST_SAVE_DELAY_MS" (tests only, see checkpoint.h).
void test_delay_before_commit() {
  const char* text = std::getenv("SYNCGRAD_TEST_SAVE_DELAY_MS");
  if (text == nullptr || *text == '\0') return;
  const long ms = std::strtol(text, nullptr, 10);
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::map<std::string, std::string> position_metadata(const std::string& model_name, const TrainingPosition& position,
                                                     const optim::OptimizerStateDict& opt_state,
                                                     const TrainConfig& config) {
  std::map<std::string, std::string> metadata = {
      {"format", kFormat},
      {"model", model_name},
      {"epoch", std::to_string(position.epoch)},
      {"batch_in_epoch", std::to_string(position.batch_in_epoch)},
      {"step", std::to_string(position.step)},
      {"rng_seed", std::to_string(position.rng_seed)},
      {"rng_offset", std::to_string(position.rng_offset)},
      {optim::kOptimizerGroupsField, optim::optimizer_groups_json(opt_state)},
      {"config", config.to_json()},
      {"world_size", std::to_string(position.world_size)},
      {"epoch_start", std::to_string(position.epoch_start)},
      {"samples_consumed", std::to_string(position.samples_consumed)},
      {"data_order", position.distributed_order ? "distributed" : "random"},
  };
  for (const auto& [key, value] : position.grad_scaler) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    metadata.emplace(kGradScalerPrefix + key, text);
  }
  return metadata;
}

TrainingPosition position_from_metadata(const std::map<std::string, std::string>& meta, const std::string& file) {
  TrainingPosition position;
  try {
    position.epoch = std::stoi(require(meta, "epoch", file));
    position.batch_in_epoch = std::stoll(require(meta, "batch_in_epoch", file));
    position.step = std::stoll(require(meta, "step", file));
    position.rng_seed = std::stoull(require(meta, "rng_seed", file));
    position.rng_offset = std::stoull(require(meta, "rng_offset", file));
    // Absent in checkpoints written before elastic resume: world size 0 (not recorded).
    const auto optional = [&](const char* key) { return meta.count(key) ? std::stoll(meta.at(key)) : int64_t{0}; };
    position.world_size = optional("world_size");
    position.epoch_start = optional("epoch_start");
    position.samples_consumed = optional("samples_consumed");
    position.distributed_order = meta.count("data_order") && meta.at("data_order") == "distributed";
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

void check_format_and_model(const std::map<std::string, std::string>& meta, const std::string& file,
                            const char* format, const std::string& model_name) {
  SYNCGRAD_CHECK(require(meta, "format", file) == format, ValueError, "checkpoint ", file, ": format \"",
                 meta.at("format"), "\" is not ", format);
  SYNCGRAD_CHECK(require(meta, "model", file) == model_name, ValueError, "checkpoint ", file, " holds a \"",
                 meta.at("model"), "\" model but --model is \"", model_name, "\"; pass --model ", meta.at("model"),
                 " or another checkpoint");
}

// The older layout: model and optimizer tensors together in checkpoint.safetensors.
TrainingPosition load_legacy(const std::string& file, const std::string& model_name, nn::Module& model,
                             optim::Optimizer& optimizer) {
  io::SafetensorsContents contents = io::load_safetensors(file);
  const auto& meta = contents.metadata;
  check_format_and_model(meta, file, kLegacyFormat, model_name);
  nn::StateDict weights;
  io::NamedTensors optimizer_tensors;
  for (const auto& [name, t] : contents.tensors) {
    if (name.rfind("model.", 0) == 0) weights.emplace_back(name.substr(6), t);
    else optimizer_tensors.emplace_back(name, t);  // "optimizer.<key>"; others are refused below
  }
  const optim::OptimizerStateDict opt_state = optim::optimizer_state_from(
      optimizer_tensors, require(meta, optim::kOptimizerGroupsField, file), file);
  io::check_state_matches(model.state_dict(), weights, file);
  model.load_state_dict(weights, true);
  optimizer.load_state_dict(opt_state);
  return position_from_metadata(meta, file);
}

CheckpointLocation step_directory(const std::string& dir) {
  io::verify_checkpoint(dir);
  CheckpointLocation location;
  location.directory = dir;
  location.model_file = join(dir, kModelFileName);
  location.state_file = join(dir, kTrainingStateFileName);
  return location;
}

CheckpointLocation legacy_directory(const std::string& dir) {
  CheckpointLocation location;
  location.directory = dir;
  location.legacy_layout = true;
  location.model_file = join(dir, kModelFileName);
  location.state_file = join(dir, kLegacyCheckpointFileName);
  return location;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

void ensure_writable_directory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  SYNCGRAD_CHECK(!ec, IOError, "--checkpoint-dir: cannot create \"", dir, "\": ", ec.message(),
                 "; choose a writable directory");
  std::string probe = join(dir, ".syncgrad-write-probe");
  {
    std::ofstream out(probe);
    SYNCGRAD_CHECK(out && out << "ok" && out.flush(), IOError, "--checkpoint-dir: \"", dir,
                   "\" is not writable; choose a writable directory");
  }
  fs::remove(probe, ec);
}

std::string save_checkpoint(const io::DirectoryLock& root, const std::string& model_name, const nn::Module& model,
                            const optim::Optimizer& optimizer, const TrainingPosition& position,
                            const TrainConfig& config, int keep) {
  const optim::OptimizerStateDict opt_state = optimizer.state_dict();
  io::CheckpointWriter writer(root, position.step);
  io::save_safetensors(writer.path_of(kModelFileName), model.state_dict(),
                       {{"format", "pt"}, {"model", model_name}, {"step", std::to_string(position.step)}});
  io::save_safetensors(writer.path_of(kTrainingStateFileName), optim::optimizer_tensors(opt_state),
                       position_metadata(model_name, position, opt_state, config));
  if (!position.comm_state.empty()) {
    const std::map<std::string, std::string> metadata = {{"step", std::to_string(position.step)},
                                                         {"world_size", std::to_string(position.world_size)}};
    io::save_safetensors(writer.path_of(kCommStateFileName), position.comm_state, metadata);
  }
  test_delay_before_commit();
  const std::string dir = writer.commit();
  if (keep > 0) io::prune_checkpoints(root, keep);
  return dir;
}

CheckpointLocation locate_checkpoint(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw IOError("checkpoint \"" + path + "\" does not exist");
  if (!fs::is_directory(status)) {
    const fs::path file(path);
    const std::string dir = file.has_parent_path() ? file.parent_path().string() : ".";
    if (exists(join(dir, io::kManifestFileName))) return step_directory(dir);
    if (file.filename() == kLegacyCheckpointFileName) {
      CheckpointLocation location = legacy_directory(dir);
      location.state_file = path;
      return location;
    }
    throw ValueError("checkpoint " + path + ": not a file of a syncgrad-train checkpoint (no " +
                     io::kManifestFileName + " beside it); pass the --checkpoint-dir of the run or one of its "
                     "step-NNNNNN directories");
  }
  const std::string name = fs::path(path).lexically_normal().filename().string();
  if (exists(join(path, io::kManifestFileName)) || io::step_of_directory_name(name) || io::is_temporary_name(name)) {
    return step_directory(path);  // a checkpoint directory: complete, or the verification says what is missing
  }
  const std::vector<std::string> steps = io::list_checkpoints(path);
  if (!steps.empty()) {
    std::vector<std::string> skipped;
    const std::optional<std::string> newest = io::newest_complete_checkpoint(path, &skipped);
    if (!newest) {
      std::string reasons;
      for (const std::string& reason : skipped) reasons += "\n  " + reason;
      throw io::CorruptCheckpointError("checkpoint directory " + path + ": none of its " +
                                       std::to_string(steps.size()) + " checkpoint(s) is complete:" + reasons);
    }
    CheckpointLocation location = step_directory(*newest);
    location.skipped = std::move(skipped);
    return location;
  }
  if (exists(join(path, kLegacyCheckpointFileName))) return legacy_directory(path);
  throw ValueError("checkpoint directory " + path + " holds no checkpoint: expected the step-NNNNNN/ directories "
                   "(each with a " + std::string(io::kManifestFileName) + ") that syncgrad-train --checkpoint-dir "
                   "writes, one such directory, or the older layout's " + kLegacyCheckpointFileName);
}

TrainingPosition load_checkpoint(const std::string& path, const std::string& model_name, nn::Module& model,
                                 optim::Optimizer& optimizer, std::ostream& notes) {
  return load_checkpoint(locate_checkpoint(path), model_name, model, optimizer, notes);
}

TrainingPosition load_checkpoint(const CheckpointLocation& location, const std::string& model_name,
                                 nn::Module& model, optim::Optimizer& optimizer, std::ostream& notes) {
  for (const std::string& reason : location.skipped) notes << "warning: skipping checkpoint: " << reason << "\n";
  if (location.legacy_layout) {
    notes << "note: " << location.directory << " has the older checkpoint layout (" << kModelFileName << " and "
          << kLegacyCheckpointFileName << " at its top); new checkpoints are saved as step-NNNNNN/ directories\n";
    return load_legacy(location.state_file, model_name, model, optimizer);
  }
  io::SafetensorsContents state = io::load_safetensors(location.state_file);
  const auto& meta = state.metadata;
  check_format_and_model(meta, location.state_file, kFormat, model_name);
  io::SafetensorsContents weights = io::load_safetensors(location.model_file);
  const auto model_step = weights.metadata.find("step");
  SYNCGRAD_CHECK(model_step != weights.metadata.end() && model_step->second == require(meta, "step", location.state_file),
                 io::CorruptCheckpointError, "checkpoint ", location.directory, ": ", kModelFileName, " and ",
                 kTrainingStateFileName, " are of different steps (",
                 model_step == weights.metadata.end() ? std::string("none") : model_step->second, " and ",
                 meta.at("step"), ")");
  io::check_state_matches(model.state_dict(), weights.tensors, location.model_file);
  model.load_state_dict(weights.tensors, true);
  const optim::OptimizerStateDict opt_state = optim::optimizer_state_from(
      state.tensors, require(meta, optim::kOptimizerGroupsField, location.state_file), location.state_file);
  optimizer.load_state_dict(opt_state);
  TrainingPosition position = position_from_metadata(meta, location.state_file);
  const std::string comm_file = join(location.directory, kCommStateFileName);
  if (exists(comm_file)) position.comm_state = io::load_safetensors(comm_file).tensors;
  return position;
}

TrainConfig recorded_config(const std::string& state_file) {
  const auto metadata = io::load_safetensors(state_file).metadata;
  const std::string& text = require(metadata, "config", state_file);
  try {
    return TrainConfig::from_json(text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("checkpoint " + state_file + ": metadata field \"config\" is not the JSON of a run config (" +
                     e.what() + "); the file is damaged or was written by another program");
  } catch (const ValueError& e) {
    throw ValueError("checkpoint " + state_file + ": metadata field \"config\": " + e.what());
  }
}

void load_weights(const std::string& file, nn::Module& model) {
  io::SafetensorsContents contents = io::load_safetensors(file);
  nn::consume_prefix_if_present(contents.tensors, "module.");  // saved from a DDP wrapper (PyTorch's too)
  io::check_state_matches(model.state_dict(), contents.tensors, file);
  model.load_state_dict(contents.tensors, true);
}

}  // namespace syncgrad::train
