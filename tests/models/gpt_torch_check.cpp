// GPT against PyTorch: the weights of a syncgrad GPT saved as safetensors load into bench/torch_gpt.py's
// PyTorch definition (same parameter names), whose logits for the same tokens must equal ours. Exits 77
// (skipped) with the reason when the Python cross-check tools (torch, safetensors) are not installed.
// Usage: gpt_torch_check PYTHON path/to/torch_gpt.py
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "syncgrad.h"

using namespace syncgrad;
namespace fs = std::filesystem;

namespace {

// Max |ours - PyTorch's| over the logits of a random model of `config` on random tokens.
double compare(const std::string& python, const std::string& script, const std::string& config, const fs::path& dir) {
  Generator gen(11);
  models::GPT model(models::GPTConfig::parse(config), &gen);
  model.eval();
  Tensor tokens = randint(0, model.config.vocab_size, {3, model.config.block_size}, {.dtype = DType::i64}, &gen);
  const std::string weights = (dir / "weights.safetensors").string(), input = (dir / "tokens.safetensors").string(),
                    output = (dir / "logits.safetensors").string();
  io::save_safetensors(weights, model.state_dict(), {{"format", "pt"}});
  io::save_safetensors(input, {{"tokens", tokens}});
  const std::string command =
      "'" + python + "' '" + script + "' logits '" + weights + "' '" + input + "' '" + config + "' '" + output + "'";
  if (std::system(command.c_str()) != 0) throw Error("the PyTorch side failed: " + command);
  NoGradGuard no_grad;
  Tensor ours = model.forward(tokens);
  Tensor theirs = io::load_safetensors(output).tensors.at(0).second;
  if (theirs.sizes() != ours.sizes()) throw Error("PyTorch's logits have shape " + shape_str(theirs.sizes()));
  return raw::max(raw::abs(raw::sub(ours, theirs))).item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpt_torch_check PYTHON torch_gpt.py\n");
    return 2;
  }
  const std::string python = argv[1], script = argv[2];
  const std::string probe = "'" + python + "' -c 'import torch, safetensors' >/dev/null 2>&1";
  if (access(python.c_str(), X_OK) != 0 || std::system(probe.c_str()) != 0) {
    std::printf("SKIP: %s cannot import torch and safetensors (scripts/setup-crosscheck.sh installs them)\n",
                python.c_str());
    return 77;
  }
  const fs::path dir = fs::temp_directory_path() / ("syncgrad-gpt-torch-" + std::to_string(getpid()));
  fs::create_directories(dir);
  int failures = 0;
  try {
    for (const char* config : {"block_size=16,n_layer=2,n_head=2,n_embd=32",
                               "block_size=40,n_layer=1,n_head=4,n_embd=32,bias=false"}) {
      const double diff = compare(python, script, config, dir);
      const bool ok = diff < 1e-4;
      std::printf("%s: %s: max |syncgrad - PyTorch| logit difference %.2e\n", ok ? "ok" : "FAILED", config, diff);
      failures += ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    failures += 1;
  }
  fs::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
