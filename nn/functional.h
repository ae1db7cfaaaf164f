// syncgrad::nn::functional: PyTorch's torch.nn.functional names for the differentiable ops, so layer code can
// be written as `namespace F = syncgrad::nn::functional; F::relu(F::linear(x, w, b))`. Using-declarations
// only: the ops themselves live in autograd/ops/.
#pragma once

#include "autograd/ops/conv.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/pool.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/views.h"

namespace syncgrad::nn::functional {

using ::syncgrad::adaptive_avg_pool2d;
using ::syncgrad::avg_pool2d;
using ::syncgrad::batch_norm;
using ::syncgrad::batch_norm_relu;
using ::syncgrad::conv2d;
using ::syncgrad::cross_entropy;
using ::syncgrad::dropout;
using ::syncgrad::embedding;
using ::syncgrad::flatten;
using ::syncgrad::gelu;
using ::syncgrad::layer_norm;
using ::syncgrad::linear;
using ::syncgrad::log_softmax;
using ::syncgrad::max_pool2d;
using ::syncgrad::max_pool2d_with_indices;
using ::syncgrad::mse_loss;
using ::syncgrad::nll_loss;
using ::syncgrad::one_hot;
using ::syncgrad::relu;
using ::syncgrad::sigmoid;
using ::syncgrad::softmax;
using ::syncgrad::tanh;

}  // namespace syncgrad::nn::functional
