// models::ResNet: basic blocks, stages, the CIFAR stem and head, torchvision's initialisation.
#include "models/resnet.h"

#include "autograd/ops/elementwise.h"
#include "autograd/ops/join.h"
#include "autograd/ops/pool.h"
#include "autograd/ops/views.h"
#include "nn/checkpoint.h"
#include "nn/init.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::models {
namespace {

std::shared_ptr<nn::Conv2d> conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, Generator* gen) {
  auto layer = std::make_shared<nn::Conv2d>(in, out, kernel, stride, kernel / 2, 1, 1, false, gen);
  nn::init::kaiming_normal_(layer->weight, 0.0, nn::init::FanMode::fan_out, nn::init::Nonlinearity::relu, gen);
  return layer;
}

// Option A: (N, C, H, W) -> (N, planes, ceil(H / stride), ceil(W / stride)), the input's channels in the middle
// and (planes - C) / 2 zero channels on each side.
Tensor zero_pad_shortcut(const Tensor& x, int64_t planes, int64_t stride) {
  Tensor sub = stride == 1 ? x : slice(slice(x, 2, 0, x.size(2), stride), 3, 0, x.size(3), stride);
  const int64_t pad = (planes - x.size(1)) / 2;
  if (pad == 0) return sub;
  Tensor zero = zeros({sub.size(0), pad, sub.size(2), sub.size(3)}, {.dtype = sub.dtype(), .device = sub.device()});
  return cat({zero, sub, zero}, 1);
}

}  // namespace

BasicBlock::BasicBlock(int64_t in_planes, int64_t planes, int64_t stride, Shortcut shortcut, Generator* gen)
    : Module("BasicBlock"), in_planes(in_planes), planes(planes), stride(stride), shortcut(shortcut) {
  const bool reshapes = stride != 1 || in_planes != planes;
  if (reshapes && shortcut == Shortcut::zero_pad && (planes < in_planes || (planes - in_planes) % 2 != 0)) {
    throw ValueError("BasicBlock: a zero-pad shortcut from " + std::to_string(in_planes) + " to " +
                     std::to_string(planes) + " channels needs an even increase; use a projection shortcut");
  }
  // torchvision's registration order: conv1, bn1, conv2, bn2, downsample.
  conv1 = register_module("conv1", conv(in_planes, planes, 3, stride, gen));
  bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2d>(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, 1, gen));
  bn2 = register_module("bn2", std::make_shared<nn::BatchNorm2d>(planes));
  if (reshapes && shortcut == Shortcut::projection) {
    downsample = register_module(
        "downsample",
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
            conv(in_planes, planes, 1, stride, gen), std::make_shared<nn::BatchNorm2d>(planes)}));
  }
}

Tensor BasicBlock::forward(const Tensor& input) {
  // relu(bn1(conv1(x))) and relu(bn2(conv2(.)) + identity), each normalisation fused with what follows it.
  Tensor out = bn1->forward_relu(conv1->forward(input));  // (N, planes, H / stride, W / stride)
  out = conv2->forward(out);
  Tensor identity = input;
  if (downsample) {
    identity = downsample->forward(input);
  } else if (stride != 1 || in_planes != planes) {
    identity = zero_pad_shortcut(input, planes, stride);
  }
  return bn2->forward_relu(out, identity);
}

ResNet::ResNet(const ResNetConfig& config, Generator* gen) : Module("ResNet"), config(config) {
  SYNCGRAD_CHECK(!config.widths.empty() && config.widths.size() == config.blocks.size(), ValueError,
                 "ResNet: widths and blocks must name the same, non-zero number of stages, got ", config.widths.size(),
                 " widths and ", config.blocks.size(), " block counts");
  for (size_t i = 0; i < config.widths.size(); ++i) {
    SYNCGRAD_CHECK(config.widths[i] > 0 && config.blocks[i] > 0, ValueError, "ResNet: stage ", i + 1, " has width ",
                   config.widths[i], " and ", config.blocks[i], " blocks; both must be positive");
  }
  conv1 = register_module("conv1", conv(3, config.widths[0], 3, 1, gen));
  bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2d>(config.widths[0]));
  int64_t in_planes = config.widths[0];
  for (size_t stage = 0; stage < config.widths.size(); ++stage) {
    auto layer = std::make_shared<nn::Sequential>();
    for (int64_t b = 0; b < config.blocks[stage]; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      layer->push_back(std::make_shared<BasicBlock>(in_planes, config.widths[stage], stride, config.shortcut, gen));
      in_planes = config.widths[stage];
    }
    layers.push_back(register_module("layer" + std::to_string(stage + 1), layer));
  }
  fc = register_module("fc", std::make_shared<nn::Linear>(in_planes, config.num_classes, true, gen));
}

Tensor ResNet::forward(const Tensor& input) {
  SYNCGRAD_CHECK(input.dim() == 4 && input.size(1) == 3, ShapeError,
                 "ResNet.forward: expected input of shape [N, 3, H, W], got ", shape_str(input.sizes()));
  Tensor x = bn1->forward_relu(conv1->forward(input));  // (N, widths[0], H, W)
  for (size_t i = 0; i < layers.size(); ++i) {  // -> (N, widths.back(), H / 2^(stages-1), ...)
    // Not the last stage: backward needs its activations first, so recomputing them would only cost time.
    const bool checkpointed = activation_checkpointing && i + 1 < layers.size();
    x = checkpointed ? nn::checkpoint(*layers[i], x) : layers[i]->forward(x);
  }
  return fc->forward(flatten(adaptive_avg_pool2d(x, 1), 1));  // (N, num_classes)
}

ResNetConfig resnet18_config() { return {{64, 128, 256, 512}, {2, 2, 2, 2}, Shortcut::projection, 10}; }

ResNetConfig resnet20_config() { return {{16, 32, 64}, {3, 3, 3}, Shortcut::zero_pad, 10}; }

std::shared_ptr<ResNet> resnet18(Generator* gen) { return std::make_shared<ResNet>(resnet18_config(), gen); }

std::shared_ptr<ResNet> resnet20(Generator* gen) { return std::make_shared<ResNet>(resnet20_config(), gen); }

}  // namespace syncgrad::models
