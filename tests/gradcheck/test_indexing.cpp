// gradcheck of the differentiable indexing and joining ops: index_select, gather, scatter_add, cat, stack,
// and split/chunk through their views. Index tensors repeat entries so the backward must accumulate.
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

namespace {

Tensor ints(std::vector<int64_t> v, const Shape& shape) { return from_vector(v, shape); }

}  // namespace

TEST_CASE("gradcheck: index_select with repeated indices") {
  Tensor x = leaf({4, 3});
  Tensor rows = tensor({3, 0, 3, 1});
  CHECK_GRADCHECK("index_select dim 0", [&](const std::vector<Tensor>& in) { return index_select(in[0], 0, rows); },
                  {x});
  Tensor cols = raw::to(tensor({2, 2, 0}), DType::i32);
  CHECK_GRADCHECK("index_select dim -1 of a transposed input, int32 index",
                  [&](const std::vector<Tensor>& in) { return index_select(transpose(in[0], 0, 1), -1, cols); }, {x});
}

TEST_CASE("gradcheck: gather with repeated indices") {
  Tensor x = leaf({3, 4}, 2);
  Tensor index = ints({0, 0, 3, 2, 2, 2}, {2, 3});  // smaller than x along dim 0, repeats along dim 1
  CHECK_GRADCHECK("gather dim 1", [&](const std::vector<Tensor>& in) { return gather(in[0], 1, index); }, {x});
  Tensor down = ints({2, 2, 0, 1}, {1, 4});
  CHECK_GRADCHECK("gather dim -2", [&](const std::vector<Tensor>& in) { return gather(in[0], -2, down); }, {x});
}

TEST_CASE("gradcheck: scatter_add into self from src with repeated indices") {
  Tensor self = leaf({3, 4}, 3);
  Tensor src = leaf({2, 4}, 4);
  Tensor index = ints({1, 1, 0, 2, 1, 1, 1, 1}, {2, 4});
  CHECK_GRADCHECK("scatter_add dim 0",
                  [&](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, index, in[1]); }, {self, src});
  // src larger than index: only its leading (2, 2) block takes part.
  Tensor block = ints({3, 3, 0, 0}, {2, 2});
  CHECK_GRADCHECK("scatter_add dim 1, src larger than index",
                  [&](const std::vector<Tensor>& in) { return scatter_add(in[0], 1, block, in[1]); }, {self, src});
}

TEST_CASE("gradcheck: cat of three tensors with different sizes along dim 1") {
  Tensor a = leaf({2, 1, 3}, 5);
  Tensor b = leaf({2, 3, 3}, 6);
  Tensor c = leaf({2, 2, 3}, 7);
  CHECK_GRADCHECK("cat dim 1", [](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[2]}, 1); },
                  {a, b, c});
  CHECK_GRADCHECK("cat with an input used twice",
                  [](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[0]}, -2); }, {a, b});
}

TEST_CASE("gradcheck: stack on dim -1") {
  Tensor a = leaf({2, 3}, 8);
  Tensor b = leaf({2, 3}, 9);
  CHECK_GRADCHECK("stack dim -1", [](const std::vector<Tensor>& in) { return stack({in[0], in[1], in[0]}, -1); },
                  {a, b});
}

TEST_CASE("gradcheck: split and chunk pieces, rejoined in another order") {
  Tensor x = leaf({3, 5}, 10);
  CHECK_GRADCHECK("chunk + cat", [](const std::vector<Tensor>& in) {
    std::vector<Tensor> pieces = chunk(in[0], 3, 1);
    return cat({pieces[2], pieces[0]}, 1);
  }, {x});
  CHECK_GRADCHECK("split with sizes + stack", [](const std::vector<Tensor>& in) {
    std::vector<Tensor> pieces = split(in[0], {1, 1, 1}, 0);
    return stack({pieces[2], pieces[1]}, 0);
  }, {x});
  // As a GPT splits q, k, v: every piece viewed and transposed, one of them used twice.
  CHECK_GRADCHECK("split pieces through views, one used twice", [](const std::vector<Tensor>& in) {
    std::vector<Tensor> pieces = split(in[0], 2, 1);  // widths 2, 2, 1
    Tensor q = transpose(view(pieces[0], {3, 2, 1}), 0, 1), k = transpose(view(pieces[1], {3, 2, 1}), 0, 1);
    return add(mul(q, k), mul(q, view(pieces[2], {1, 3, 1})));
  }, {x});
}
