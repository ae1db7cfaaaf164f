// resnet_forward: the syncgrad side of the PyTorch cross-check (tests/train/resnet_torch_check.py). Loads a
// ResNet's state dict written by PyTorch, runs the batch of INPUT (tensors "input" (N, 3, H, W) f32 and
// "target" (N) i64) through it and writes to OUTPUT:
//   eval_logits            logits in eval mode (running statistics)
//   train_logits, loss     logits and cross-entropy loss in train mode (batch statistics)
//   grad.<name>            every parameter's gradient of that loss
//   state.<name>           every buffer after the train-mode forward (updated running statistics)
// DTYPE (float32 unless given) is the type the model runs in: float64 checks the same graph without float32's
// rounding; every output is written in that type.
// Usage: resnet_forward resnet18|resnet20 WEIGHTS INPUT OUTPUT [float32|float64]
#include <cstdio>
#include <exception>
#include <string>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

Tensor named(const io::NamedTensors& tensors, const std::string& name, const std::string& file) {
  for (const auto& [key, t] : tensors) {
    if (key == name) return t;
  }
  throw ValueError(file + " has no tensor \"" + name + "\"");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dtype_name = argc == 6 ? argv[5] : "float32";
  if ((argc != 5 && argc != 6) || (dtype_name != "float32" && dtype_name != "float64")) {
    std::fprintf(stderr, "usage: %s resnet18|resnet20 WEIGHTS INPUT OUTPUT [float32|float64]\n", argv[0]);
    return 2;
  }
  const DType dtype = dtype_name == "float64" ? DType::f64 : DType::f32;
  try {
    std::shared_ptr<nn::Module> model = models::make_model(argv[1]);
    io::NamedTensors weights = io::load_safetensors(argv[2]).tensors;
    io::check_state_matches(model->state_dict(), weights, argv[2]);
    model->load_state_dict(weights, true);
    model->to(dtype);
    const io::NamedTensors batch = io::load_safetensors(argv[3]).tensors;
    const Tensor input = named(batch, "input", argv[3]).to(dtype), target = named(batch, "target", argv[3]);

    io::NamedTensors out;
    model->eval();
    {
      NoGradGuard no_grad;
      out.emplace_back("eval_logits", model->forward(input));
    }
    model->train();
    Tensor logits = model->forward(input);
    Tensor loss = cross_entropy(logits, target);
    loss.backward();
    out.emplace_back("train_logits", logits.detach());
    out.emplace_back("loss", loss.detach());
    for (const auto& [name, p] : model->named_parameters()) out.emplace_back("grad." + name, p.grad());
    for (const auto& [name, b] : model->named_buffers()) out.emplace_back("state." + name, b);
    io::save_safetensors(argv[4], out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resnet_forward: %s\n", e.what());
    return 1;
  }
  return 0;
}
