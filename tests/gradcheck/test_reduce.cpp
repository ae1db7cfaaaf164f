// gradcheck of the differentiable reductions and softmax/log_softmax (inputs with distinct values, so max/min
// have no ties).
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: sum and mean over dims, with and without keepdim") {
  Tensor x = leaf({2, 3, 4});
  CHECK_GRADCHECK("sum all", [](const std::vector<Tensor>& in) { return sum(in[0]); }, {x});
  CHECK_GRADCHECK("sum dims", [](const std::vector<Tensor>& in) { return sum(in[0], {0, -1}); }, {x});
  CHECK_GRADCHECK("sum keepdim", [](const std::vector<Tensor>& in) { return sum(in[0], {1}, true); }, {x});
  CHECK_GRADCHECK("Tensor::sum", [](const std::vector<Tensor>& in) { return in[0].sum(); }, {x});
  CHECK_GRADCHECK("mean all", [](const std::vector<Tensor>& in) { return in[0].mean(); }, {x});
  CHECK_GRADCHECK("mean dims keepdim", [](const std::vector<Tensor>& in) { return mean(in[0], {0, 2}, true); }, {x});
  CHECK_GRADCHECK("mean of a transposed input",
                  [](const std::vector<Tensor>& in) { return mean(in[0].transpose(0, 2), {1}); }, {x});
}

TEST_CASE("gradcheck: max/min over all elements and along a dim") {
  Tensor x = leaf({3, 4}, 2);
  CHECK_GRADCHECK("max all", [](const std::vector<Tensor>& in) { return max(in[0]); }, {x});
  CHECK_GRADCHECK("min all", [](const std::vector<Tensor>& in) { return min(in[0]); }, {x});
  CHECK_GRADCHECK("max dim", [](const std::vector<Tensor>& in) { return max(in[0], 1).values; }, {x});
  CHECK_GRADCHECK("min dim keepdim", [](const std::vector<Tensor>& in) { return min(in[0], 0, true).values; }, {x});
  Tensor y = leaf({2, 3, 2}, 3);
  CHECK_GRADCHECK("max middle dim", [](const std::vector<Tensor>& in) { return max(in[0], -2).values; }, {y});
}

TEST_CASE("gradcheck: var and std with corrections") {
  Tensor x = leaf({3, 4, 2}, 4);
  CHECK_GRADCHECK("var all", [](const std::vector<Tensor>& in) { return var(in[0]); }, {x});
  CHECK_GRADCHECK("var dims correction 0",
                  [](const std::vector<Tensor>& in) { return var(in[0], {0, 2}, 0, true); }, {x});
  CHECK_GRADCHECK("std dim", [](const std::vector<Tensor>& in) { return syncgrad::std(in[0], {1}); }, {x});
  CHECK_GRADCHECK("std all correction 2",
                  [](const std::vector<Tensor>& in) { return syncgrad::std(in[0], {}, 2); }, {x});
}

TEST_CASE("gradcheck: logsumexp") {
  Tensor x = leaf({2, 3, 4}, 5);
  CHECK_GRADCHECK("logsumexp dims", [](const std::vector<Tensor>& in) { return logsumexp(in[0], {0, 2}); }, {x});
  CHECK_GRADCHECK("logsumexp last keepdim",
                  [](const std::vector<Tensor>& in) { return logsumexp(in[0], {-1}, true); }, {x});
}

TEST_CASE("gradcheck: softmax and log_softmax along the last and a middle dim") {
  Tensor x = leaf({2, 3, 4}, 6);
  CHECK_GRADCHECK("softmax last", [](const std::vector<Tensor>& in) { return softmax(in[0], -1); }, {x});
  CHECK_GRADCHECK("softmax middle", [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {x});
  CHECK_GRADCHECK("log_softmax last", [](const std::vector<Tensor>& in) { return log_softmax(in[0], 2); }, {x});
  CHECK_GRADCHECK("log_softmax first", [](const std::vector<Tensor>& in) { return log_softmax(in[0], 0); }, {x});
}
