// models::ResNet for 32x32 images (CIFAR-10), with torchvision's parameter names so checkpoints exchange with a
// PyTorch definition:
//   resnet18: the CIFAR variant of ResNet-18: conv3x3 3->64 stem + BN + ReLU (no max-pool), stages of 2 basic
//             blocks at 64/128/256/512 channels (stride 2 at stages 2-4, 1x1-conv + BN projection shortcuts
//             where the shape changes), global average pool, fc 512->10; 11,173,962 parameters.
//   resnet20: He et al.'s CIFAR ResNet-20: conv3x3 3->16 stem, 3 stages of 3 blocks at 16/32/64 channels,
//             option A shortcuts (stride-2 subsampling and zero-padded channels, no parameters), fc 64->10;
//             269,722 parameters (272,474 with option B's projection shortcuts).
// Initialisation as torchvision: convolutions kaiming_normal (fan_out, relu), BatchNorm weight 1 and bias 0,
// the Linear layer PyTorch's default.
#pragma once

#include <memory>
#include <vector>

#include "nn/container.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "tensor/generator.h"

namespace syncgrad::models {

// How a block's shortcut matches a changed shape (stride or channel count); same-shape shortcuts are identity.
enum class Shortcut : uint8_t {
  projection,  // downsample = Sequential(conv1x1 with the block's stride, BatchNorm2d) (He et al.'s option B)
  zero_pad,    // x[:, :, ::stride, ::stride] with the new channels zero-filled on both sides (option A)
};

// Two 3x3 conv + BN layers with a ReLU between them, added to the shortcut, then a ReLU.
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in_planes, int64_t planes, int64_t stride, Shortcut shortcut, Generator* gen);
  // (N, in_planes, H, W) -> (N, planes, H / stride, W / stride)
  Tensor forward(const Tensor& input) override;

  int64_t in_planes, planes, stride;
  Shortcut shortcut;
  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2;
  std::shared_ptr<nn::Sequential> downsample;  // only for a projection shortcut where the shape changes
};

struct ResNetConfig {
  std::vector<int64_t> widths;  // channels of each stage; the stem has widths[0]
  std::vector<int64_t> blocks;  // basic blocks per stage (stride 2 at the first block of every stage but the first)
  Shortcut shortcut = Shortcut::projection;
  int64_t num_classes = 10;
};

class ResNet : public nn::Module {
 public:
  // Children conv1, bn1, layer1 .. layerN (Sequentials of BasicBlocks), fc; ValueError for an empty or
  // inconsistent config.
  explicit ResNet(const ResNetConfig& config, Generator* gen = nullptr);
  // (N, 3, H, W) -> logits (N, num_classes)
  Tensor forward(const Tensor& input) override;

  ResNetConfig config;
  std::shared_ptr<nn::Conv2d> conv1;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::vector<std::shared_ptr<nn::Sequential>> layers;
  std::shared_ptr<nn::Linear> fc;
  // Each stage's activations but the last's (backward needs those first) are recomputed in backward instead of
  // kept (nn/checkpoint.h; BatchNorm's running statistics are updated once). Under DistributedDataParallel with
  // find_unused_parameters use DDPOptions::static_graph.
  bool activation_checkpointing = false;
};

ResNetConfig resnet18_config();
ResNetConfig resnet20_config();
std::shared_ptr<ResNet> resnet18(Generator* gen = nullptr);
std::shared_ptr<ResNet> resnet20(Generator* gen = nullptr);

}  // namespace syncgrad::models
