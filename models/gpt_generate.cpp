// Autoregressive sampling from a GPT: full forward over the cropped context per new token (no key/value cache;
// contexts are at most block_size long), then temperature, top-k and an inverse-CDF draw on the host.
#include "models/gpt_generate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "autograd/grad_mode.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::models {
namespace {

// Restores a module's training mode when it goes out of scope.
class EvalScope {
 public:
  explicit EvalScope(nn::Module& module) : module_(module), was_training_(module.is_training()) { module.eval(); }
  ~EvalScope() { module_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  nn::Module& module_;
  bool was_training_;
};

// A token drawn from softmax(logits / temperature) restricted to the top_k largest logits (all when 0).
int64_t sample(std::vector<double> logits, const SamplingOptions& options, Generator& gen) {
  if (options.top_k > 0 && options.top_k < static_cast<int64_t>(logits.size())) {
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[static_cast<size_t>(options.top_k - 1)];
    for (double& l : logits) {
      if (l < kth) l = -std::numeric_limits<double>::infinity();
    }
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (double& l : logits) total += (l = std::exp((l - top) / options.temperature));
  double target = gen.next_double() * total;
  for (size_t i = 0; i < logits.size(); ++i) {
    target -= logits[i];
    if (target < 0) return static_cast<int64_t>(i);
  }
  for (size_t i = logits.size(); i-- > 0;) {  // rounding left target >= 0: the last token with weight
    if (logits[i] > 0) return static_cast<int64_t>(i);
  }
  return 0;
}

}  // namespace

std::vector<int64_t> generate(GPT& model, const std::vector<int64_t>& prompt, int64_t max_new_tokens,
                              const SamplingOptions& options) {
  SYNCGRAD_CHECK(!prompt.empty(), ValueError, "generate: the prompt needs at least one token (e.g. a newline)");
  SYNCGRAD_CHECK(max_new_tokens >= 0, ValueError, "generate: max_new_tokens must be >= 0, got ", max_new_tokens);
  SYNCGRAD_CHECK(options.temperature > 0 && std::isfinite(options.temperature), ValueError,
                 "generate: temperature must be a positive number, got ", std::to_string(options.temperature));
  SYNCGRAD_CHECK(options.top_k >= 0, ValueError, "generate: top_k must be >= 0 (0: all tokens), got ", options.top_k);
  EvalScope eval(model);
  NoGradGuard no_grad;
  Generator gen(options.seed);
  std::vector<int64_t> context = prompt, generated;
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(context.size()), model.config.block_size);
    std::vector<int64_t> window(context.end() - len, context.end());
    Tensor logits = model.forward(from_vector(window, {1, len}));  // (1, T, vocab)
    const int64_t next = sample(to_vector<double>(raw::select(raw::select(logits, 0, 0), 0, len - 1)), options, gen);
    context.push_back(next);
    generated.push_back(next);
  }
  return generated;
}

}  // namespace syncgrad::models
