// syncgrad-bench gpt-kernels: the default GPT's kernels besides its linear layers' GEMMs (layer norm, GELU,
// c_fc fused with its GELU (GEMMs included), the fused attention with its q/k/v split, cross-entropy,
// bias-gradient sums, residual adds, fills, the AdamW step), each on the shapes of one training step (batch
// 64 x 128 tokens, 128 channels, 4 heads of 32, 256 classes), on one thread and on --threads N (default 2),
// alternating; the speed-up of N threads says which of them split their work between the threads. A kernel
// that stays on one thread leaves the others waiting.
//   syncgrad-bench gpt-kernels [--threads N] [--reps N]
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/count_options.h"
#include "bench/fastest_alternating.h"
#include "bench/subcommands.h"
#include "syncgrad.h"

namespace {

using namespace syncgrad;

constexpr int64_t kBatch = 64, kTokens = 128, kChannels = 128, kHeads = 4, kClasses = 256;
constexpr int64_t kRows = kBatch * kTokens;  // 8192 token positions

struct Kernel {
  std::string name;
  std::function<void()> run;
};

std::vector<Kernel> gpt_step_kernels(Generator* gen) {
  const Tensor x = randn({kRows, kChannels}, {}, gen), grad = randn({kRows, kChannels}, {}, gen);
  const Tensor ln_weight = ones({kChannels}).requires_grad_(), ln_bias = zeros({kChannels}).requires_grad_();
  const Tensor hidden = randn({kRows, 4 * kChannels}, {}, gen);
  const Tensor hidden_grad = randn({kRows, 4 * kChannels}, {}, gen);
  const Tensor qkv = randn({kBatch, kTokens, 3 * kChannels}, {}, gen);
  const Tensor attention_grad = randn({kBatch, kHeads, kTokens, kChannels / kHeads}, {}, gen);
  const Tensor logits = randn({kRows, kClasses}, {}, gen);
  const Tensor targets = randint(0, kClasses, {kRows}, {.dtype = DType::i64}, gen);
  const Tensor bias_rows = randn({kRows, 3 * kChannels}, {}, gen), residual = randn({kRows, kChannels}, {}, gen);
  const Tensor buffer = empty({kBatch, kTokens, 3 * kChannels});
  const Tensor fc_weight = raw::mul(randn({4 * kChannels, kChannels}, {}, gen), 0.02).requires_grad_();
  const Tensor fc_bias = zeros({4 * kChannels}).requires_grad_();
  auto model = std::make_shared<models::GPT>(models::GPTConfig{}, gen);
  std::vector<Tensor> params = model->parameters();
  for (Tensor& p : params) p.set_grad(randn(p.sizes(), {}, gen));
  int64_t elements = 0;
  for (const Tensor& p : params) elements += p.numel();
  auto adamw = std::make_shared<optim::AdamW>(params);
  const std::string adamw_name = "AdamW step, " + std::to_string(elements) + " parameters in " +
                                 std::to_string(params.size()) + " tensors";
  return {
      {"layer norm fwd+bwd (8192, 128)",
       [=] { layer_norm(x.detach().requires_grad_(), {kChannels}, ln_weight, ln_bias).backward(grad); }},
      {"GELU (tanh) fwd+bwd (8192, 512)",
       [=] { gelu(hidden.detach().requires_grad_(), GeluApproximate::tanh).backward(hidden_grad); }},
      {"c_fc + GELU fused fwd+bwd, (8192, 128) -> 512",
       [=] {
         linear_gelu(x.detach().requires_grad_(), fc_weight, fc_bias, GeluApproximate::tanh).backward(hidden_grad);
       }},
      {"attention fwd+bwd, q/k/v split (64, 4, 128, 32)",
       [=] {
         const Tensor input = qkv.detach().requires_grad_();
         const std::vector<Tensor> parts = split(input, kChannels, 2);
         auto heads = [&](int64_t i) {
           return transpose(view(parts[i], {kBatch, kTokens, kHeads, kChannels / kHeads}), 1, 2);
         };
         scaled_dot_product_attention(heads(0), heads(1), heads(2), true).backward(attention_grad);
       }},
      {"cross-entropy fwd+bwd (8192, 256)",
       [=] { cross_entropy(logits.detach().requires_grad_(), targets).backward(); }},
      {"bias gradient: sum of (8192, 384) over rows", [=] { raw::sum(bias_rows, {0}); }},
      {"residual add (8192, 128)", [=] { raw::add(x, residual); }},
      {"zero fill (64, 128, 384)", [=] { raw::fill_(buffer, 0.0); }},
      {adamw_name, [=] { adamw->step(); }},
  };
}

}  // namespace

int bench_gpt_kernels_main(int argc, char** argv) {
  int threads = 2, reps = 20;
  if (const auto status = bench::parse_count_options(argc, argv, "gpt-kernels", threads, reps)) return *status;
  std::printf("syncgrad-bench gpt-kernels: the default GPT's non-GEMM kernels on its step's shapes, 1 thread "
              "against %d, fastest of %d, alternating\n\n",
              threads, reps);
  std::printf("%-50s %11s %11s %9s\n", "kernel", "1 thread", (std::to_string(threads) + " threads").c_str(),
              "speed-up");
  Generator gen(11);
  for (const Kernel& k : gpt_step_kernels(&gen)) {
    const auto [one, many] = bench::fastest_alternating(
        reps,
        [&] {
          set_num_threads(1);
          k.run();
        },
        [&] {
          set_num_threads(threads);
          k.run();
        });
    std::printf("%-50s %8.3f ms %8.3f ms %8.2fx\n", k.name.c_str(), one * 1e3, many * 1e3, one / many);
  }
  return 0;
}
