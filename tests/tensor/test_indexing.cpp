// Indexing and joining ops: index_select, index_add_, gather, scatter_add(_), cat, stack, split, chunk.
// Values are checked against hand-computed results; every error is checked for its type and message.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "syncgrad.h"

using namespace syncgrad;

namespace {

using Values = std::vector<double>;

Values values(const Tensor& t) { return to_vector<double>(t); }

Tensor ints(std::vector<int64_t> v, const Shape& shape) { return from_vector(v, shape); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The message of the exception of type E that `f` throws (a failed check when it throws none).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return {};
}

const DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                            DType::i64, DType::i32, DType::u8,  DType::boolean};

}  // namespace

TEST_CASE("index_select picks rows and columns, with repeats, int32 indices and negative dims") {
  Tensor t = arange(12).reshape({3, 4});  // rows 0..3, 4..7, 8..11
  Tensor rows = raw::index_select(t, 0, tensor({2, 0, 2}));
  CHECK(rows.sizes() == Shape{3, 4});
  CHECK(values(rows) == Values{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  Tensor cols = raw::index_select(t, -1, raw::to(tensor({3, 1}), DType::i32));
  CHECK(cols.sizes() == Shape{3, 2});
  CHECK(values(cols) == Values{3, 1, 7, 5, 11, 9});
  Tensor none = raw::index_select(t, 1, from_vector(std::vector<int64_t>{}, {0}));
  CHECK(none.sizes() == Shape{3, 0});
  Tensor one = raw::index_select(t, 0, scalar_tensor(1, DType::i64, kCPU));  // 0-d index: one slice
  CHECK(one.sizes() == Shape{1, 4});
  CHECK(values(one) == Values{4, 5, 6, 7});
  Tensor scalar = raw::index_select(scalar_tensor(5.0, DType::f64, kCPU), 0, tensor({0}));
  CHECK(scalar.dim() == 0);
  CHECK(scalar.item<double>() == 5.0);
}

TEST_CASE("index_select on non-contiguous inputs and indices, 3-d middle dim") {
  Tensor t = arange(12).reshape({3, 4}).transpose(0, 1);  // (4, 3): row r = {r, r+4, r+8}
  CHECK(values(raw::index_select(t, 0, tensor({3, 0}))) == Values{3, 7, 11, 0, 4, 8});
  Tensor strided_index = raw::slice(tensor({2, 9, 0, 9}), 0, 0, 4, 2);  // {2, 0}, stride 2
  CHECK(values(raw::index_select(t, 1, strided_index)) == Values{8, 0, 9, 1, 10, 2, 11, 3});
  CHECK(values(raw::index_select(t.contiguous(), 0, strided_index)) == Values{2, 6, 10, 0, 4, 8});
  Tensor cube = arange(24).reshape({2, 3, 4});
  Tensor mid = raw::index_select(cube, 1, tensor({1, 1}));
  CHECK(mid.sizes() == Shape{2, 2, 4});
  CHECK(values(mid) == Values{4, 5, 6, 7, 4, 5, 6, 7, 16, 17, 18, 19, 16, 17, 18, 19});
  CHECK(values(raw::index_select(raw::permute(cube, {2, 0, 1}), 0, tensor({2}))) == Values{2, 6, 10, 14, 18, 22});
}

TEST_CASE("index_select of many contiguous rows (split over the intra-op threads)") {
  const int64_t n = 50000;
  Tensor t = arange(2 * n).reshape({n, 2});  // row r = {2r, 2r + 1}
  Tensor perm = randperm(n);
  std::vector<int64_t> expected;
  for (int64_t r : to_vector<int64_t>(perm)) {
    expected.push_back(2 * r);
    expected.push_back(2 * r + 1);
  }
  CHECK(to_vector<int64_t>(raw::index_select(t, 0, perm)) == expected);
}

TEST_CASE("index_select and gather support every dtype") {
  Tensor base = arange(12).reshape({3, 4});
  for (DType dtype : kAllDTypes) {
    CAPTURE(dtype_name(dtype));
    Tensor t = raw::to(base, dtype);
    Tensor selected = raw::index_select(t, 1, tensor({0, 3}));
    CHECK(selected.dtype() == dtype);
    CHECK(values(selected) == values(raw::to(ints({0, 3, 4, 7, 8, 11}, {3, 2}), dtype)));
    Tensor gathered = raw::gather(t, 0, ints({2, 0, 1, 2}, {1, 4}));
    CHECK(gathered.dtype() == dtype);
    CHECK(values(gathered) == values(raw::to(ints({8, 1, 6, 11}, {1, 4}), dtype)));
  }
}

TEST_CASE("index_select errors name the op, the offending value, the dim and the size") {
  Tensor t = arange(12).reshape({3, 4});
  std::string msg = message_of<IndexError>([&] { raw::index_select(t, 1, tensor({1, 4})); });
  CHECK(contains(msg, "index_select"));
  CHECK(contains(msg, "index 4"));
  CHECK(contains(msg, "dimension 1"));
  CHECK(contains(msg, "size 4"));
  msg = message_of<IndexError>([&] { raw::index_select(t, 0, tensor({-1})); });
  CHECK(contains(msg, "index -1"));
  CHECK(contains(msg, "size 3"));
  msg = message_of<DTypeError>([&] { raw::index_select(t, 0, tensor({0.f})); });
  CHECK(contains(msg, "index_select"));
  CHECK(contains(msg, "float32"));
  msg = message_of<ShapeError>([&] { raw::index_select(t, 0, ints({0, 1}, {1, 2})); });
  CHECK(contains(msg, "[1, 2]"));
  msg = message_of<IndexError>([&] { raw::index_select(t, 2, tensor({0})); });
  CHECK(contains(msg, "index_select"));
  msg = message_of<ShapeError>([&] { raw::index_select(scalar_tensor(1.0), 0, tensor({0, 0})); });
  CHECK(contains(msg, "exactly one index"));
}

TEST_CASE("index_add_ accumulates repeated indices in place; index_add leaves self alone") {
  Tensor self = zeros({3, 2}, {.dtype = DType::f64});
  Tensor src = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
  uint64_t before = self.version();
  raw::index_add_(self, 0, tensor({2, 0, 2}), src);
  CHECK(self.version() > before);
  CHECK(values(self) == Values{3, 4, 0, 0, 6, 8});
  Tensor columns = raw::index_add(ones({2, 3}, {.dtype = DType::i32}), -1, raw::to(tensor({1, 1}), DType::i32),
                                  raw::to(ints({10, 20, 30, 40}, {2, 2}), DType::i32));
  CHECK(values(columns) == Values{1, 31, 1, 1, 71, 1});
  Tensor untouched = zeros({2, 2});
  raw::index_add(untouched, 0, tensor({1}), ones({1, 2}));
  CHECK(values(untouched) == Values{0, 0, 0, 0});
  Tensor halves = zeros({2}, {.dtype = DType::bf16});
  raw::index_add_(halves, 0, tensor({1, 1, 1}), full({3}, 0.5, {.dtype = DType::bf16}));
  CHECK(values(halves) == Values{0, 1.5});
}

TEST_CASE("index_add_ errors; a bad index leaves self unchanged") {
  Tensor self = zeros({3, 2});
  std::string msg = message_of<ShapeError>([&] { raw::index_add_(self, 0, tensor({0, 1}), ones({3, 2})); });
  CHECK(contains(msg, "index_add_"));
  CHECK(contains(msg, "[3, 2]"));
  CHECK(contains(msg, "[2, 2]"));
  msg = message_of<DTypeError>(
      [&] { raw::index_add_(self, 0, tensor({0}), ones({1, 2}, {.dtype = DType::f64})); });
  CHECK(contains(msg, "float64"));
  msg = message_of<IndexError>([&] { raw::index_add_(self, 0, tensor({0, 3}), ones({2, 2})); });
  CHECK(contains(msg, "index 3"));
  CHECK(contains(msg, "dimension 0"));
  CHECK(values(self) == Values{0, 0, 0, 0, 0, 0});
}

TEST_CASE("gather picks one element per index position") {
  Tensor t = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  // dim 1: out[i][j] = t[i][index[i][j]]
  Tensor along_rows = raw::gather(t, 1, ints({2, 0, 0, 1, 1, 1}, {2, 3}));
  CHECK(values(along_rows) == Values{3, 1, 1, 5, 5, 5});
  // dim 0 (as -2): out[i][j] = t[index[i][j]][j]; index smaller than input along dim 1.
  Tensor along_cols = raw::gather(t, -2, ints({1, 0, 0, 0}, {2, 2}));
  CHECK(along_cols.sizes() == Shape{2, 2});
  CHECK(values(along_cols) == Values{4, 2, 1, 2});
  // Index larger than the input along the gathered dim.
  CHECK(values(raw::gather(t, 1, ints({0, 0, 0, 0}, {1, 4}))) == Values{1, 1, 1, 1});
  // Non-contiguous input: t^T is (3, 2) = {{1, 4}, {2, 5}, {3, 6}}.
  CHECK(values(raw::gather(t.transpose(0, 1), 1, ints({1, 0, 1}, {3, 1}))) == Values{4, 2, 6});
  Tensor scalar = raw::gather(scalar_tensor(7.0, DType::f64, kCPU), 0, scalar_tensor(0, DType::i64, kCPU));
  CHECK(scalar.dim() == 0);
  CHECK(scalar.item<double>() == 7.0);
}

TEST_CASE("gather errors") {
  Tensor t = zeros({2, 3});
  std::string msg = message_of<IndexError>([&] { raw::gather(t, 1, ints({0, 3}, {1, 2})); });
  CHECK(contains(msg, "gather"));
  CHECK(contains(msg, "index 3"));
  CHECK(contains(msg, "dimension 1"));
  CHECK(contains(msg, "size 3"));
  msg = message_of<DTypeError>([&] { raw::gather(t, 1, raw::to(ints({0}, {1, 1}), DType::i32)); });
  CHECK(contains(msg, "int32"));
  msg = message_of<ShapeError>([&] { raw::gather(t, 1, tensor({0})); });
  CHECK(contains(msg, "same number of dims"));
  msg = message_of<ShapeError>([&] { raw::gather(t, 1, zeros({3, 1}, {.dtype = DType::i64})); });
  CHECK(contains(msg, "dimension 0"));
  CHECK(contains(msg, "[3, 1]"));
  msg = message_of<IndexError>([&] { raw::gather(t, -3, zeros({1, 1}, {.dtype = DType::i64})); });
  CHECK(contains(msg, "gather"));
}

TEST_CASE("scatter_add accumulates repeated indices; out of place and in place") {
  Tensor self = ones({2, 3}, {.dtype = DType::f64});
  Tensor src = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  // dim 1: self[i][index[i][j]] += src[i][j]
  Tensor index = ints({0, 0, 2, 1, 1, 1}, {2, 3});
  Tensor out = raw::scatter_add(self, 1, index, src);
  CHECK(values(out) == Values{4, 1, 4, 1, 16, 1});
  CHECK(values(self) == Values{1, 1, 1, 1, 1, 1});
  // src larger than index: only src's leading (1, 2) block is read; dim 0 as -2.
  Tensor small = raw::scatter_add(zeros({3, 2}, {.dtype = DType::f64}), -2, ints({2, 2}, {1, 2}), src);
  CHECK(values(small) == Values{0, 0, 0, 0, 1, 2});
  uint64_t before = self.version();
  raw::scatter_add_(self, 0, ints({1, 1, 0}, {1, 3}), src);
  CHECK(self.version() > before);
  CHECK(values(self) == Values{1, 1, 4, 2, 3, 1});
  // Non-contiguous self and src.
  Tensor target = zeros({3, 2}, {.dtype = DType::f64}).transpose(0, 1);  // (2, 3) view
  raw::scatter_add_(target, 1, ints({2, 2, 2, 0, 0, 0}, {2, 3}), src.transpose(0, 1).contiguous().transpose(0, 1));
  CHECK(values(target) == Values{0, 0, 6, 15, 0, 0});
}

TEST_CASE("scatter_add supports half, integer and bool dtypes") {
  Tensor h = raw::scatter_add(zeros({2}, {.dtype = DType::f16}), 0, tensor({0, 0, 1}),
                              full({3}, 0.25, {.dtype = DType::f16}));
  CHECK(values(h) == Values{0.5, 0.25});
  Tensor u = raw::scatter_add(zeros({2}, {.dtype = DType::u8}), 0, tensor({1, 1}), raw::to(tensor({3, 4}), DType::u8));
  CHECK(values(u) == Values{0, 7});
  Tensor b = raw::scatter_add(zeros({3}, {.dtype = DType::boolean}), 0, tensor({2, 2}),
                              ones({2}, {.dtype = DType::boolean}));
  CHECK(values(b) == Values{0, 0, 1});
}

TEST_CASE("scatter_add errors; a bad index leaves self unchanged") {
  Tensor self = zeros({2, 3});
  Tensor src = ones({2, 3});
  std::string msg = message_of<IndexError>([&] { raw::scatter_add_(self, 0, ints({0, 2}, {1, 2}), src); });
  CHECK(contains(msg, "scatter_add_"));
  CHECK(contains(msg, "index 2"));
  CHECK(contains(msg, "dimension 0"));
  CHECK(contains(msg, "size 2"));
  CHECK(values(self) == Values{0, 0, 0, 0, 0, 0});
  msg = message_of<DTypeError>([&] { raw::scatter_add_(self, 0, ints({0}, {1, 1}), ones({2, 3}, {.dtype = DType::f64})); });
  CHECK(contains(msg, "float64"));
  msg = message_of<DTypeError>([&] { raw::scatter_add_(self, 0, raw::to(ints({0}, {1, 1}), DType::i32), src); });
  CHECK(contains(msg, "int32"));
  msg = message_of<ShapeError>([&] { raw::scatter_add_(self, 0, tensor({0}), src); });
  CHECK(contains(msg, "self"));
  msg = message_of<ShapeError>([&] { raw::scatter_add_(self, 0, ints({0, 0, 0, 0}, {1, 4}), ones({2, 4})); });
  CHECK(contains(msg, "self size 3"));
  msg = message_of<ShapeError>([&] { raw::scatter_add_(self, 0, zeros({3, 1}, {.dtype = DType::i64}), src); });
  CHECK(contains(msg, "src size 2"));
}

TEST_CASE("cat joins along any dim with type promotion and non-contiguous inputs") {
  Tensor a = arange(6).reshape({2, 3});
  Tensor b = arange(6, 9).reshape({1, 3});
  Tensor rows = raw::cat({a, b});
  CHECK(rows.sizes() == Shape{3, 3});
  CHECK(values(rows) == Values{0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor c = from_vector(std::vector<float>{0.5f, 1.5f}, {2, 1});
  Tensor cols = raw::cat({a, c, a.transpose(0, 1).contiguous().transpose(0, 1)}, -1);
  CHECK(cols.dtype() == DType::f32);
  CHECK(cols.sizes() == Shape{2, 7});
  CHECK(values(cols) == Values{0, 1, 2, 0.5, 0, 1, 2, 3, 4, 5, 1.5, 3, 4, 5});
  Tensor transposed = raw::cat({a.transpose(0, 1), a.transpose(0, 1)}, 1);
  CHECK(values(transposed) == Values{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5});
  // PyTorch's legacy rule: 1-D empty tensors are left out.
  Tensor skipped = raw::cat({from_vector(std::vector<int64_t>{}, {0}), a}, 1);
  CHECK(skipped.sizes() == Shape{2, 3});
  CHECK(raw::cat({zeros({0}), zeros({0})}).sizes() == Shape{0});
}

TEST_CASE("cat errors name the op, the tensors and their shapes") {
  Tensor a = zeros({2, 3});
  CHECK(contains(message_of<ValueError>([] { raw::cat({}); }), "non-empty"));
  std::string msg = message_of<ShapeError>([&] { raw::cat({a, zeros({2, 4}), zeros({3, 3})}, 0); });
  CHECK(contains(msg, "cat"));
  CHECK(contains(msg, "tensor 1"));
  CHECK(contains(msg, "[2, 4]"));
  CHECK(contains(msg, "[2, 3]"));
  msg = message_of<ShapeError>([&] { raw::cat({a, zeros({2, 3, 1})}, 0); });
  CHECK(contains(msg, "same number of dims"));
  msg = message_of<ShapeError>([&] { raw::cat({a, scalar_tensor(1.0)}); });
  CHECK(contains(msg, "0-d"));
  msg = message_of<IndexError>([&] { raw::cat({a, a}, 2); });
  CHECK(contains(msg, "cat"));
}

TEST_CASE("stack joins equal shapes along a new dim") {
  Tensor a = arange(3);
  Tensor b = arange(3, 6);
  Tensor first = raw::stack({a, b});
  CHECK(first.sizes() == Shape{2, 3});
  CHECK(values(first) == Values{0, 1, 2, 3, 4, 5});
  Tensor last = raw::stack({a, b}, -1);
  CHECK(last.sizes() == Shape{3, 2});
  CHECK(values(last) == Values{0, 3, 1, 4, 2, 5});
  CHECK(raw::stack({scalar_tensor(1.0), scalar_tensor(2.0)}).sizes() == Shape{2});
  std::string msg = message_of<ShapeError>([&] { raw::stack({a, arange(4)}); });
  CHECK(contains(msg, "stack"));
  CHECK(contains(msg, "[4]"));
  CHECK(contains(msg, "[3]"));
  CHECK(contains(message_of<ValueError>([] { raw::stack({}); }), "stack"));
  CHECK(contains(message_of<IndexError>([&] { raw::stack({a, b}, 2); }), "stack"));
}

TEST_CASE("split and chunk return views with PyTorch's sizing") {
  Tensor t = arange(10).reshape({2, 5});
  std::vector<Tensor> pieces = raw::split(t, 2, 1);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[0].sizes() == Shape{2, 2});
  CHECK(pieces[2].sizes() == Shape{2, 1});
  CHECK(values(pieces[1]) == Values{2, 3, 7, 8});
  CHECK(pieces[1].impl()->storage() == t.impl()->storage());
  std::vector<Tensor> sized = raw::split(t, {1, 0, 4}, -1);
  REQUIRE(sized.size() == 3);
  CHECK(sized[1].sizes() == Shape{2, 0});
  CHECK(values(sized[2]) == Values{1, 2, 3, 4, 6, 7, 8, 9});
  CHECK(raw::split(t, {5}, 1).size() == 1);
  CHECK(raw::split(t, Shape{2, 3}, 1)[1].sizes() == Shape{2, 3});
  CHECK(raw::split(t, 7, 1).size() == 1);
  CHECK(raw::split(zeros({0}), 0).size() == 1);
  std::vector<Tensor> chunks = raw::chunk(t, 3, 1);  // ceil(5 / 3) = 2: sizes 2, 2, 1
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[2].sizes() == Shape{2, 1});
  CHECK(values(chunks[2]) == Values{4, 9});
  CHECK(raw::chunk(arange(6), 4).size() == 3);  // ceil(6 / 4) = 2: only three chunks
  CHECK(raw::chunk(zeros({0, 2}), 3).size() == 3);
  CHECK(raw::chunk(t, 2, 0)[1].sizes() == Shape{1, 5});
}

TEST_CASE("split and chunk errors") {
  Tensor t = arange(5);
  std::string msg = message_of<ValueError>([&] { raw::split(t, {2}); });
  CHECK(contains(msg, "add up to 2"));
  CHECK(contains(msg, "size 5"));
  CHECK(contains(message_of<ValueError>([&] { raw::split(t, {6, -1}); }), "non-negative"));
  CHECK(contains(message_of<ValueError>([&] { raw::split(t, 0); }), "split_size"));
  CHECK(contains(message_of<ValueError>([&] { raw::chunk(t, 0); }), "chunks"));
  CHECK(contains(message_of<ShapeError>([] { raw::chunk(scalar_tensor(1.0), 2); }), "0-d"));
  CHECK(contains(message_of<IndexError>([&] { raw::split(t, 2, 1); }), "split"));
}

TEST_CASE("differentiable split pieces and cat/stack route gradients to their inputs") {
  Tensor x = arange(6).to(DType::f64).reshape({2, 3}).detach().requires_grad_();
  std::vector<Tensor> pieces = split(x, {1, 2}, 1);
  pieces[1].sum().backward();
  CHECK(values(x.grad()) == Values{0, 1, 1, 0, 1, 1});
  Tensor a = ones({2}, {.dtype = DType::f64, .requires_grad = true});
  Tensor fixed = ones({1}, {.dtype = DType::i64});
  Tensor joined = cat({a, fixed});
  CHECK(joined.dtype() == DType::f64);
  joined.backward(from_vector(std::vector<double>{2, 3, 4}, {3}));
  CHECK(values(a.grad()) == Values{2, 3});
  Tensor b = ones({2}, {.dtype = DType::f32, .requires_grad = true});
  Tensor stacked = stack({b, ones({2}, {.dtype = DType::f64})}, 1);  // (2, 2), f64
  stacked.backward(from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2}));
  CHECK(b.grad().dtype() == DType::f32);
  CHECK(values(b.grad()) == Values{1, 3});
}
