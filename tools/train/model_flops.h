// Model FLOPs of the bundled models, the numerator of the model FLOPs utilisation (MFU) in the progress line
// and the metrics log: counted from the layers' shapes, not measured. A linear layer costs 2 x in x out FLOPs
// per row, a convolution 2 x C_out x C_in / groups x kH x kW x OH x OW per example (the output size from the
// example's height and width through the model's strides and pools), GPT its models::GPT::flops_per_token()
// per token (attention included). Biases, normalisations, activations and pools are left out, as usual.
// Training costs 3 x the forward (the backward computes the input and the weight gradients, 2 x), the
// convention PaLM's MFU uses (the first layer's input gradient, which nobody needs, counted too).
#pragma once

#include <vector>

#include "nn/module.h"

namespace syncgrad::train {

// The forward FLOPs of one example of shape `example` (without the batch dimension: (C, H, W) for images,
// its windows of block_size + 1 tokens for GPT, which trains on block_size) through `model`: an MLP, CNN, ResNet or GPT of models/; 0 for any other model
// (whose FLOPs this does not know: no MFU is shown for it).
double forward_flops_per_example(const nn::Module& model, const std::vector<int64_t>& example);

// 3 x forward_flops_per_example, except GPT's, whose flops_per_token() already counts training.
double training_flops_per_example(const nn::Module& model, const std::vector<int64_t>& example);

}  // namespace syncgrad::train
