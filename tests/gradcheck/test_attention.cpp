// gradcheck of the fused scaled dot-product attention (causal and not, 4-D and 3-D, a custom scale, strided
// views of one q/k/v projection, narrowed or split as GPT splits it, more queries than keys).
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: scaled_dot_product_attention, causal and full, (B, H, L, E) and (N, L, E)") {
  for (bool causal : {true, false}) {
    INFO("causal " << causal);
    CHECK_GRADCHECK("attention 4-D", [causal](const std::vector<Tensor>& in) {
      return scaled_dot_product_attention(in[0], in[1], in[2], causal);
    }, {leaf({2, 2, 5, 3}, 1), leaf({2, 2, 5, 3}, 2), leaf({2, 2, 5, 4}, 3)});
    CHECK_GRADCHECK("attention 3-D, 6 queries, 4 keys, scale 0.7", [causal](const std::vector<Tensor>& in) {
      return scaled_dot_product_attention(in[0], in[1], in[2], causal, 0.7);
    }, {leaf({2, 6, 3}, 4), leaf({2, 4, 3}, 5), leaf({2, 4, 2}, 6)});
  }
}

TEST_CASE("gradcheck: attention over strided head views of one qkv tensor, longer than one row block") {
  // (B, T, 3 * H * D) split into q, k, v and heads, as GPT's attention does: no copies before the kernel.
  const int64_t batch = 1, len = 37, heads = 2, dim = 2;
  CHECK_GRADCHECK("attention on qkv views", [=](const std::vector<Tensor>& in) {
    auto part = [&](int64_t i) {
      return transpose(view(narrow(in[0], 2, i * heads * dim, heads * dim), {batch, len, heads, dim}), 1, 2);
    };
    return scaled_dot_product_attention(part(0), part(1), part(2), true);
  }, {leaf({batch, len, 3 * heads * dim}, 7)});
}

TEST_CASE("gradcheck: attention over heads split from one qkv tensor (gradients written side by side)") {
  const int64_t batch = 2, len = 9, heads = 2, dim = 3;
  CHECK_GRADCHECK("attention on split qkv", [=](const std::vector<Tensor>& in) {
    const std::vector<Tensor> parts = split(in[0], heads * dim, 2);
    auto part = [&](int64_t i) { return transpose(view(parts[i], {batch, len, heads, dim}), 1, 2); };
    return scaled_dot_product_attention(part(0), part(1), part(2), true);
  }, {leaf({batch, len, 3 * heads * dim}, 8)});
}
