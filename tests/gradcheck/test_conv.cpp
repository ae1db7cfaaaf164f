// gradcheck of conv2d and the 2-D pooling ops on small float64 shapes (strides, padding, dilation, groups).
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: conv2d with bias, groups=2, stride 2, dilation 2, padding") {
  Tensor x = leaf({2, 4, 5, 5}, 1), w = leaf({4, 2, 2, 2}, 2), b = leaf({4}, 3);
  CHECK_GRADCHECK("conv2d groups=2 stride 2 dilation 2 padding 1",
                  [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], 2, 1, 2, 2); }, {x, w, b});
  CHECK_GRADCHECK("conv2d stride (2, 1) padding (0, 1) no bias",
                  [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], {}, {2, 1}, {0, 1}); },
                  {x, leaf({3, 4, 3, 2}, 4)});
  CHECK_GRADCHECK("conv2d 1x1 depthwise",
                  [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], 1, 0, 1, 4); },
                  {x, leaf({4, 1, 1, 1}, 5), b});
}

TEST_CASE("gradcheck: conv2d with only the weight requiring grad") {
  Tensor x = leaf({1, 2, 4, 4}, 6);
  x.requires_grad_(false);
  CHECK_GRADCHECK("conv2d weight only", [](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], {}, 1, 1); },
                  {x, leaf({3, 2, 3, 3}, 7)});
}

TEST_CASE("gradcheck: max_pool2d (padding, dilation, ceil_mode)") {
  // Random normal inputs: ties in a window (the kinks) have probability zero.
  Tensor x = leaf({2, 3, 7, 6}, 8);
  CHECK_GRADCHECK("max_pool2d k2", [](const std::vector<Tensor>& in) { return max_pool2d(in[0], 2); }, {x});
  CHECK_GRADCHECK("max_pool2d k3 s2 p1 ceil",
                  [](const std::vector<Tensor>& in) { return max_pool2d(in[0], 3, 2, 1, 1, true); }, {x});
  CHECK_GRADCHECK("max_pool2d overlapping, dilation 2",
                  [](const std::vector<Tensor>& in) { return max_pool2d(in[0], 2, 1, 1, 2); }, {x});
}

TEST_CASE("gradcheck: avg_pool2d (padding, ceil_mode, count_include_pad)") {
  Tensor x = leaf({2, 3, 7, 6}, 9);
  CHECK_GRADCHECK("avg_pool2d k2", [](const std::vector<Tensor>& in) { return avg_pool2d(in[0], 2); }, {x});
  CHECK_GRADCHECK("avg_pool2d k3 s2 p1 ceil",
                  [](const std::vector<Tensor>& in) { return avg_pool2d(in[0], 3, 2, 1, true); }, {x});
  CHECK_GRADCHECK("avg_pool2d k3 s2 p1 ceil without padding in the divisor",
                  [](const std::vector<Tensor>& in) { return avg_pool2d(in[0], 3, 2, 1, true, false); }, {x});
}

TEST_CASE("gradcheck: adaptive_avg_pool2d") {
  Tensor x = leaf({2, 3, 7, 6}, 10);
  CHECK_GRADCHECK("adaptive_avg_pool2d (3, 4)",
                  [](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], {3, 4}); }, {x});
  CHECK_GRADCHECK("adaptive_avg_pool2d upsampling (9, 8)",
                  [](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], {9, 8}); }, {x});
}

TEST_CASE("gradcheck: a small CNN stack (conv, max_pool, conv, adaptive_avg_pool)") {
  Tensor x = leaf({2, 1, 8, 8}, 11), w1 = leaf({4, 1, 3, 3}, 12), w2 = leaf({6, 4, 3, 3}, 13);
  CHECK_GRADCHECK("conv -> max_pool -> conv -> adaptive_avg_pool",
                  [](const std::vector<Tensor>& in) {
                    Tensor h = max_pool2d(conv2d(in[0], in[1], {}, 1, 1), 2);
                    return adaptive_avg_pool2d(conv2d(h, in[2], {}, 1, 1), 1);
                  },
                  {x, w1, w2});
}
