// The cross-rank checks of syncgrad-train's options and resumed state (see rank_agreement.h).
#include "tools/train/rank_agreement.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tools/train/training_run.h"

namespace syncgrad::train {

const std::vector<std::string> kPerRankOptions = {"threads", "workers", "data_dir", "keep_checkpoints"};

namespace {

constexpr const char* kSameCommandLine =
    "start every rank with the same command line (only --threads, --workers, --data-dir, --checkpoint-dir, "
    "--keep-checkpoints, --log-file, --log-every, --init-from, the paths of --resume and the GPU index of "
    "--device may differ)";

// "batch_size" -> "--batch-size".
std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace

distributed::Settings shared_options(const TrainConfig& config) {
  distributed::Settings settings;
  const nlohmann::ordered_json options = nlohmann::ordered_json::parse(config.to_json());
  for (const auto& [key, value] : options.items()) {
    if (std::find(kPerRankOptions.begin(), kPerRankOptions.end(), key) != kPerRankOptions.end()) continue;
    if (key == "shuffle") {
      settings.emplace_back("--no-shuffle", value.get<bool>() ? "not given" : "given");
    } else if (key == "device") {
      const std::string device = value.get<std::string>();
      settings.emplace_back("--device type", device.substr(0, device.find(':')));
    } else {
      settings.emplace_back(flag_of(key), value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  // Every rank takes part in the trace's clock measurement and gathering, so all or none trace the same steps.
  settings.emplace_back("--trace", config.trace_file.empty() ? "not given" : "given");
  settings.emplace_back("--trace-steps", to_string(config.trace_steps));
  return settings;
}

void check_ranks_agree_on_options(distributed::ProcessGroup& group, const TrainConfig& config) {
  distributed::check_same_on_all_ranks(group, shared_options(config), "command line", kSameCommandLine);
}

void check_ranks_agree_on_state(const TrainingRun& run) {
  distributed::Settings settings = {{"resumed at step", std::to_string(run.position.step)},
                                    {"resumed at epoch", std::to_string(run.position.epoch + 1)},
                                    {"resumed at batch", std::to_string(run.position.batch_in_epoch)}};
  const distributed::Settings optimizer = run.optimizer->settings();
  settings.insert(settings.end(), optimizer.begin(), optimizer.end());
  distributed::check_same_on_all_ranks(*run.job.group(), settings, "resumed state",
                                       "every rank must --resume from the same checkpoint and build the same "
                                       "optimizer; " + std::string(kSameCommandLine));
}

}  // namespace syncgrad::train
