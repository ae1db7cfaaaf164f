// CPU fused linear + tanh-GELU, forward and backward, for float32: the rows go in blocks of about 512 KiB of
// output, and each block's pre-activation (forward) or its gradient (backward) is used while it is in the
// core's cache instead of being written out and read back by a separate pass. Forward per block: the product
// with the bias (kernels::gemm_bias, oneDNN at these sizes), then GELU reading it from cache; the
// pre-activation is still stored, as the backward needs it. Backward per block: g = grad_out * gelu'(pre) into
// one reused scratch block, the bias gradient summed in the same pass (gelu_tanh_backward_rows), then
// grad_x = g @ weight for the block's rows and grad_weight += g^T @ x; g never reaches memory. Blocks run in
// lanes whose partial sums are added in a fixed order, so the result is the same whatever the thread count.
// Other dtypes are left to the composed ops (the kernels return false).
#include <algorithm>
#include <initializer_list>
#include <vector>

#include "tensor/cpu/gelu_tanh.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/linalg.h"
#include "tensor/ops/linear_gelu.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/views.h"
#include "tensor/threads.h"

namespace syncgrad::cpu {
namespace {

constexpr int64_t kBlockElements = int64_t{1} << 17;  // 512 KiB of float32 per (rows, N) block
// The backward's blocks go in at most this many lanes, each with its own weight-gradient partial.
constexpr int64_t kMaxLanes = 16;
constexpr int64_t kMaxPartialBytes = int64_t{64} << 20;  // the lanes' partials beyond the first, in all

// Rows per block for N output features: at least 16, a multiple of 16.
int64_t block_rows(int64_t features) { return std::max<int64_t>(16, kBlockElements / features / 16 * 16); }

// Whether the kernels take the operands: the defined ones all float32, with M, N and K (`inner`) above 0.
bool takes(const Tensor& pre, int64_t inner, std::initializer_list<const Tensor*> tensors) {
  if (pre.numel() == 0 || inner == 0) return false;
  for (const Tensor* t : tensors) {
    if (t->defined() && t->dtype() != DType::f32) return false;
  }
  return true;
}

// pre (M, N) = x (M, K) @ weight (N, K)^T + bias, out = gelu_tanh(pre), one block of rows at a time; the blocks
// are shared out among the intra-op threads, each block's product and activation on one thread.
bool linear_gelu_forward_kernel(const Tensor& out, const Tensor& pre, const Tensor& x, const Tensor& weight,
                                const Tensor& bias) {
  if (!takes(pre, x.size(1), {&out, &pre, &x, &weight, &bias})) return false;
  const Tensor weight_t = raw::transpose(weight, 0, 1);  // (K, N), read in place
  const int64_t m = x.size(0), block = block_rows(pre.size(1));
  parallel_for((m + block - 1) / block, 1, [&](int64_t first_block, int64_t end_block) {
    for (int64_t r0 = first_block * block; r0 < std::min(m, end_block * block); r0 += block) {
      const int64_t rows = std::min(block, m - r0);
      const Tensor pre_block = raw::narrow(pre, 0, r0, rows), x_block = raw::narrow(x, 0, r0, rows);
      if (bias.defined()) kernels::gemm_bias(x.device(), pre_block, x_block, weight_t, bias);
      else kernels::gemm(x.device(), pre_block, x_block, weight_t, 1, 0);
      gelu_tanh_contiguous(raw::narrow(out, 0, r0, rows), pre_block);
    }
  });
  return true;
}

// With g = grad_out * gelu_tanh'(pre) made one block at a time in a per-thread scratch block: grad_x = g @ weight,
// grad_weight = g^T @ x and grad_bias = g's column sums (double), each only where defined (x is read only for
// grad_weight, weight only for grad_x). The blocks go in lanes, a fixed number for the shape: each lane sums its
// blocks in order into its own partials (the first lane into grad_weight itself), the threads share out the lanes,
// and the partials are added in lane order, so the result does not depend on the thread count.
bool linear_gelu_backward_kernel(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                 const Tensor& grad_out, const Tensor& pre, const Tensor& x, const Tensor& weight) {
  const int64_t inner = grad_x.defined() ? grad_x.size(1) : grad_weight.defined() ? grad_weight.size(1) : 1;
  if (!takes(pre, inner, {&grad_x, &grad_weight, &grad_bias, &grad_out, &pre, &x, &weight})) return false;
  const int64_t m = pre.size(0), features = pre.size(1), block = block_rows(features);
  const int64_t blocks = (m + block - 1) / block;
  const int64_t partial_bytes = grad_weight.defined() ? grad_weight.numel() * 4 : 0;
  const int64_t lanes_wanted = std::max<int64_t>(
      1, std::min({kMaxLanes, blocks, partial_bytes > 0 ? 1 + kMaxPartialBytes / partial_bytes : kMaxLanes}));
  const int64_t blocks_per_lane = (blocks + lanes_wanted - 1) / lanes_wanted;
  const int64_t lanes = (blocks + blocks_per_lane - 1) / blocks_per_lane;  // each with at least one block
  const Device device = pre.device();
  std::vector<Tensor> weight_partials(static_cast<size_t>(lanes));  // lane 0's is grad_weight
  std::vector<std::vector<double>> bias_partials(static_cast<size_t>(lanes));
  parallel_for(lanes, 1, [&](int64_t first_lane, int64_t end_lane) {
    const Tensor scratch = empty({std::min(block, m), features});  // (block, N)
    for (int64_t lane = first_lane; lane < end_lane; ++lane) {
      Tensor& weight_sum = weight_partials[static_cast<size_t>(lane)];
      if (grad_weight.defined()) weight_sum = lane == 0 ? grad_weight : empty(grad_weight.sizes());
      std::vector<double>& bias_sum = bias_partials[static_cast<size_t>(lane)];
      if (grad_bias.defined()) bias_sum.assign(static_cast<size_t>(features), 0.0);
      const int64_t lane_begin = lane * blocks_per_lane * block;
      const int64_t lane_end = std::min(m, lane_begin + blocks_per_lane * block);
      for (int64_t r0 = lane_begin; r0 < lane_end; r0 += block) {
        const int64_t rows = std::min(block, m - r0);
        const Tensor g = raw::narrow(scratch, 0, 0, rows);  // (rows, N)
        gelu_tanh_backward_rows(g.data_ptr<float>(), grad_out.data_ptr<float>() + r0 * features,
                                pre.data_ptr<float>() + r0 * features, rows, features,
                                grad_bias.defined() ? bias_sum.data() : nullptr);
        if (grad_x.defined()) kernels::gemm(device, raw::narrow(grad_x, 0, r0, rows), g, weight, 1, 0);
        if (grad_weight.defined()) {
          kernels::gemm(device, weight_sum, raw::transpose(g, 0, 1), raw::narrow(x, 0, r0, rows), 1,
                        r0 == lane_begin ? 0 : 1);
        }
      }
    }
  });
  if (grad_weight.defined()) {
    for (int64_t lane = 1; lane < lanes; ++lane) raw::add_(grad_weight, weight_partials[static_cast<size_t>(lane)]);
  }
  if (grad_bias.defined()) {
    float* bias_out = grad_bias.data_ptr<float>();
    for (int64_t j = 0; j < features; ++j) {
      double total = 0.0;
      for (const std::vector<double>& partial : bias_partials) total += partial[static_cast<size_t>(j)];
      bias_out[j] = static_cast<float>(total);
    }
  }
  return true;
}

const KernelRegistrar reg_linear_gelu_forward(kernels::linear_gelu_forward, DeviceType::kCPU,
                                              &linear_gelu_forward_kernel);
const KernelRegistrar reg_linear_gelu_backward(kernels::linear_gelu_backward, DeviceType::kCPU,
                                               &linear_gelu_backward_kernel);

}  // namespace
}  // namespace syncgrad::cpu
