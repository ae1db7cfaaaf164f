// Layer-by-layer FLOP counts of the bundled models (see model_flops.h); each walk follows its model's forward.
#include "tools/train/model_flops.h"

#include "models/cnn.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "models/resnet.h"
#include "nn/conv.h"
#include "nn/linear.h"

namespace syncgrad::train {
namespace {

// (C, H, W) of one example between layers.
struct ImageShape {
  int64_t channels = 0, height = 0, width = 0;
};

double linear_flops(const nn::Linear& layer) {
  return 2.0 * static_cast<double>(layer.in_features) * static_cast<double>(layer.out_features);
}

// Adds the convolution's FLOPs to `flops` and returns its output shape.
ImageShape conv(const nn::Conv2d& layer, const ImageShape& in, double& flops) {
  const Conv2dParams& p = layer.params;
  const ImageShape out{layer.out_channels,
                       conv_output_size(in.height, layer.kernel_size.h, p.stride.h, p.padding.h, p.dilation.h),
                       conv_output_size(in.width, layer.kernel_size.w, p.stride.w, p.padding.w, p.dilation.w)};
  flops += 2.0 * static_cast<double>(layer.out_channels * (layer.in_channels / p.groups) * layer.kernel_size.h *
                                     layer.kernel_size.w * out.height * out.width);
  return out;
}

ImageShape image_of(const std::vector<int64_t>& example) {
  if (example.size() != 3) return {};
  return {example[0], example[1], example[2]};
}

double mlp_flops(const models::MLP& m) { return linear_flops(*m.fc1) + linear_flops(*m.fc2) + linear_flops(*m.fc3); }

// conv1 - pool 2 - conv2 - pool 2 - fc1 - fc2 (models/cnn.h).
double cnn_flops(const models::CNN& m, ImageShape x) {
  double flops = 0;
  x = conv(*m.conv1, x, flops);
  x = {x.channels, x.height / 2, x.width / 2};
  x = conv(*m.conv2, x, flops);
  return flops + linear_flops(*m.fc1) + linear_flops(*m.fc2);
}

// Stem, then per block conv1, conv2 and a projection shortcut's 1x1 convolution; average pool, fc.
double resnet_flops(const models::ResNet& m, ImageShape x) {
  double flops = 0;
  x = conv(*m.conv1, x, flops);
  for (const auto& layer : m.layers) {
    for (const auto& child : *layer) {
      const auto& block = static_cast<const models::BasicBlock&>(*child);
      const ImageShape in = x;
      x = conv(*block.conv1, in, flops);
      x = conv(*block.conv2, x, flops);
      if (block.downsample) conv(static_cast<const nn::Conv2d&>(*(*block.downsample)[0]), in, flops);
    }
  }
  return flops + linear_flops(*m.fc);
}

}  // namespace

double forward_flops_per_example(const nn::Module& model, const std::vector<int64_t>& example) {
  if (const auto* m = dynamic_cast<const models::MLP*>(&model)) return mlp_flops(*m);
  // A window of block_size + 1 tokens trains on block_size of them (tools/train/text_task.cpp).
  if (const auto* m = dynamic_cast<const models::GPT*>(&model)) {
    return m->flops_per_token() * static_cast<double>(m->config.block_size) / 3.0;
  }
  const ImageShape image = image_of(example);
  if (image.height <= 0 || image.width <= 0) return 0;
  if (const auto* m = dynamic_cast<const models::CNN*>(&model)) return cnn_flops(*m, image);
  if (const auto* m = dynamic_cast<const models::ResNet*>(&model)) return resnet_flops(*m, image);
  return 0;
}

double training_flops_per_example(const nn::Module& model, const std::vector<int64_t>& example) {
  return 3.0 * forward_flops_per_example(model, example);
}

}  // namespace syncgrad::train
