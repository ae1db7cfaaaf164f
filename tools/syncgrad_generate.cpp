// syncgrad-generate: samples text from a GPT checkpoint written by `syncgrad-train --model gpt`. The model
// sizes come from the run's config recorded in the checkpoint (or --model-config); the prompt's bytes
// are the first tokens and the sampled bytes are printed after it.
//   syncgrad-generate --checkpoint ckpt/ --prompt "Q: " --max-new-tokens 300 --temperature 0.8 --top-k 40
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "models/gpt.h"
#include "models/gpt_generate.h"
#include "syncgrad.h"
#include "tensor/io/safetensors.h"
#include "tensor/io/checkpoint_directory.h"
#include "tools/cli_checks.h"
#include "tools/train/checkpoint.h"
#include "tools/train/train_config.h"

namespace {

namespace fs = std::filesystem;
using namespace syncgrad;
namespace cli = syncgrad::cli;

struct Options {
  std::string checkpoint;
  std::string model_config;
  bool model_config_given = false;
  std::string prompt = "\n";
  int64_t max_new_tokens = 500;
  double temperature = 1.0;
  int64_t top_k = 0;
  uint64_t seed = 0;
};

struct LoadedModel {
  nn::StateDict weights;
  std::string config_source;  // where the model sizes came from, for the error hints
  models::GPTConfig config;
};

// Where the weights and the run config are: a --checkpoint-dir (its newest complete checkpoint), a step
// directory or a file in one (tools/train/checkpoint.h; model and config always of the same step), the older
// layout's directory or files, or any safetensors file of weights (sizes from --model-config or the defaults).
struct Sources {
  fs::path weights_file;
  fs::path run_file;  // empty: no run config beside the weights
};

Sources find_sources(const std::string& checkpoint) {
  const fs::path path(checkpoint);
  if (fs::is_directory(path)) {
    train::CheckpointLocation location = train::locate_checkpoint(checkpoint);
    for (const std::string& reason : location.skipped) {
      std::fprintf(stderr, "syncgrad-generate: warning: skipping checkpoint: %s\n", reason.c_str());
    }
    return {location.model_file, location.state_file};
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (fs::exists(dir / io::kManifestFileName)) {
    const train::CheckpointLocation location = train::locate_checkpoint(dir.string());
    const bool state_given = path.filename() == train::kTrainingStateFileName;
    return {state_given ? fs::path(location.model_file) : path, location.state_file};
  }
  if (fs::exists(dir / train::kLegacyCheckpointFileName)) return {path, dir / train::kLegacyCheckpointFileName};
  return {path, {}};
}

// The weights and the model sizes: --model-config, else the run config recorded in the checkpoint, else the
// defaults.
LoadedModel load(const Options& o) {
  if (!fs::exists(fs::path(o.checkpoint))) {
    throw IOError("--checkpoint: \"" + o.checkpoint + "\" does not exist; pass the --checkpoint-dir of a "
                  "`syncgrad-train --model gpt` run, one of its step-NNNNNN directories or a model.safetensors");
  }
  const Sources sources = find_sources(o.checkpoint);
  io::SafetensorsContents contents = io::load_safetensors(sources.weights_file.string());
  auto model = contents.metadata.find("model");
  if (model != contents.metadata.end() && model->second != "gpt") {
    throw ValueError("--checkpoint: " + sources.weights_file.string() + " holds a \"" + model->second +
                     "\" model; syncgrad-generate needs a gpt checkpoint (syncgrad-train --model gpt)");
  }
  LoadedModel loaded;
  for (auto& [name, t] : contents.tensors) {
    if (name.rfind("optimizer.", 0) == 0) continue;  // the older layout's checkpoint.safetensors: optimizer state
    loaded.weights.emplace_back(name.rfind("model.", 0) == 0 ? name.substr(6) : name, t);
  }
  std::string config_text;
  if (o.model_config_given) {
    config_text = o.model_config;
    loaded.config_source = "--model-config";
  } else if (!sources.run_file.empty() && fs::exists(sources.run_file)) {
    config_text = train::recorded_config(sources.run_file.string()).model_config;
    loaded.config_source = "the run config in " + sources.run_file.string();
  } else {
    loaded.config_source = "the default sizes (no run config beside the weights)";
  }
  loaded.config = models::GPTConfig::parse(config_text);
  return loaded;
}

int run(const Options& o) {
  LoadedModel loaded = load(o);
  models::GPT model(loaded.config);
  try {
    model.load_state_dict(loaded.weights, true);
  } catch (const Error& e) {
    throw ValueError(std::string(e.what()) + "\n  the model sizes came from " + loaded.config_source + " (" +
                     loaded.config.to_string() + "); pass the run's --model-config");
  }
  std::vector<int64_t> prompt(o.prompt.begin(), o.prompt.end());
  for (int64_t& token : prompt) token = static_cast<unsigned char>(token);
  const std::vector<int64_t> text = models::generate(
      model, prompt, o.max_new_tokens, {.temperature = o.temperature, .top_k = o.top_k, .seed = o.seed});
  std::string bytes = o.prompt;
  for (int64_t token : text) bytes += static_cast<char>(token);
  std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"syncgrad-generate: sample text from a GPT checkpoint of syncgrad-train (--model gpt)"};
  Options o;
  app.add_option("--checkpoint", o.checkpoint,
                 "the run's --checkpoint-dir (its newest complete checkpoint), one of its step-NNNNNN directories, "
                 "or a model.safetensors")
      ->required();
  app.add_option("--model-config", o.model_config,
                 "model sizes (n_layer=4,n_embd=128,...); default: the ones recorded in the checkpoint")
      ->each([&o](const std::string&) { o.model_config_given = true; });
  app.add_option("--prompt", o.prompt, "the text to continue (default: a newline)");
  app.add_option("--max-new-tokens", o.max_new_tokens, "bytes to generate")
      ->check(cli::at_least(0))
      ->capture_default_str();
  app.add_option("--temperature", o.temperature, "> 0; below 1 gives more predictable text")->capture_default_str();
  app.add_option("--top-k", o.top_k, "sample among the k most likely bytes only (0: all)")
      ->check(cli::at_least(0))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "the same seed, checkpoint and prompt give the same text")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    set_num_threads(1);  // one short sequence at a time: too little work to share between threads
    return run(o);
  } catch (const syncgrad::Error& e) {
    std::fprintf(stderr, "syncgrad-generate: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-generate: unexpected error: %s\n", e.what());
    return 1;
  }
}
