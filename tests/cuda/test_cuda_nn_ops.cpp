// CUDA conformance: losses (cross_entropy with ignore_index and label smoothing, nll_loss, one_hot), embedding,
// index_select / index_add_ / gather / scatter_add_, dropout and the random factories against the CPU with the
// same inputs and generator states; their index errors; and their gradients.
#include <doctest/doctest.h>

#include <string>

#include "tests/check_error.h"
#include "tests/cuda/conformance.h"

using namespace syncgrad;
using namespace syncgrad::cudatest;
using syncgrad::testing::check_error;

namespace {

// Class indices in [0, classes) of `shape`, with every `ignore_every`-th one set to -100 (ignored).
Tensor class_targets(const Shape& shape, int64_t classes, uint64_t seed, int64_t ignore_every = 0) {
  Generator gen(seed);
  Tensor t = randint(0, classes, shape, {.dtype = DType::i64}, &gen);
  if (ignore_every > 0) {
    Tensor flat = raw::reshape(t, {t.numel()});
    raw::fill_(raw::slice(flat, 0, 0, t.numel(), ignore_every), -100);
  }
  return t;
}

// The message of the error `call` throws ("" when it throws none).
std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cross_entropy and nll_loss forward and backward, with ignored targets and label smoothing") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (double smoothing : {0.0, 0.1}) {
      for (Reduction reduction : {Reduction::mean, Reduction::sum, Reduction::none}) {
        const CrossEntropyOptions options{.reduction = reduction, .label_smoothing = smoothing};
        const std::string what = std::string("cross_entropy ") + dtype_name(dtype) + " " + reduction_name(reduction) +
                                 " smoothing " + std::to_string(smoothing);
        check_op(
            what, {random_values({8, 5}, dtype, 1, 2.0), class_targets({8}, 5, 2, 3)},
            [&](const std::vector<Tensor>& v) { return raw::cross_entropy(v[0], v[1], options); }, Layout::transposed);
        check_op(
            what + " (N, C, d)", {random_values({3, 4, 6}, dtype, 3), class_targets({3, 6}, 4, 4, 5)},
            [&](const std::vector<Tensor>& v) { return raw::cross_entropy(v[0], v[1], options); }, Layout::strided);
      }
    }
    check_op(std::string("nll_loss ") + dtype_name(dtype),
             {raw::log_softmax(random_values({7, 6}, dtype, 5), 1), class_targets({7}, 6, 6, 4)},
             [](const std::vector<Tensor>& v) { return raw::nll_loss(v[0], v[1]); });
  }
  const Tolerance tol = tolerance_for(DType::f32);
  for (double smoothing : {0.0, 0.2}) {
    check_grad(
        "cross_entropy gradient", {random_values({6, 5, 3}, DType::f32, 7), class_targets({6, 3}, 5, 8, 4)},
        [smoothing](const std::vector<Tensor>& v) { return cross_entropy(v[0], v[1], {.label_smoothing = smoothing}); },
        tol);
  }
  check_grad(
      "nll_loss gradient", {random_values({5, 4}, DType::f64, 9), class_targets({5}, 4, 10, 2)},
      [](const std::vector<Tensor>& v) { return nll_loss(log_softmax(v[0], 1), v[1], {.reduction = Reduction::sum}); },
      tolerance_for(DType::f64));
  check_grad(
      "mse_loss gradient", {random_values({4, 3}, DType::f32, 11), random_values({4, 3}, DType::f32, 12)},
      [](const std::vector<Tensor>& v) { return mse_loss(v[0], v[1]); }, tol);
}

TEST_CASE("target and index errors on CUDA say what the CPU says") {
  const Tensor logits = random_values({4, 3}, DType::f32, 13);
  const Tensor bad = from_vector(std::vector<int64_t>{0, 2, 7, -3}, {4});
  for (auto* op : {+[](const Tensor&x, const Tensor&t) { return raw::cross_entropy(x, t); },
                   +[](const Tensor&x, const Tensor&t) { return raw::nll_loss(x, t); }}) {
    const std::string on_cpu = error_of([&] { op(logits, bad); });
    const std::string on_cuda = error_of([&] { op(place(logits, kCuda0), place(bad, kCuda0)); });
    CHECK(!on_cpu.empty());
    CHECK(on_cuda == on_cpu);
  }
  check_error<IndexError>([&] { raw::one_hot(place(bad, kCuda0), 5); }, {"index 7", "num_classes 5"});
  check_op("one_hot", {class_targets({3, 4}, 6, 14)},
           [](const std::vector<Tensor>& v) { return raw::one_hot(v[0], 6); });
  const Tensor weight = random_values({5, 3}, DType::f32, 15);
  const Tensor indices = from_vector(std::vector<int64_t>{1, 4, 5, 0}, {2, 2});
  CHECK(error_of([&] { raw::embedding(place(weight, kCuda0), place(indices, kCuda0)); }) ==
        error_of([&] { raw::embedding(weight, indices); }));
  const Tensor index = from_vector(std::vector<int64_t>{2, 9, 1}, {3});
  CHECK(error_of([&] { raw::index_select(place(weight, kCuda0), 0, place(index, kCuda0)); }) ==
        error_of([&] { raw::index_select(weight, 0, index); }));
  CHECK(error_of([&] {
          raw::gather(place(weight, kCuda0), 1, place(raw::view(index, {3, 1}), kCuda0));
        }) == error_of([&] {
          raw::gather(weight, 1, raw::view(index, {3, 1}));
        }));
}

TEST_CASE("embedding forward and backward with repeated indices and padding_idx") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (DType index_dtype : {DType::i64, DType::i32}) {
      const Tensor weight = random_values({10, 6}, dtype, 16);
      const Tensor indices = raw::to(class_targets({4, 5}, 10, 17), index_dtype);
      check_op(
          std::string("embedding ") + dtype_name(dtype), {weight, indices},
          [](const std::vector<Tensor>& v) { return raw::embedding(v[0], v[1]); }, Layout::transposed);
      for (std::optional<int64_t> padding : {std::optional<int64_t>(), std::optional<int64_t>(3)}) {
        check_op(
            std::string("embedding_backward ") + dtype_name(dtype), {random_values({4, 5, 6}, dtype, 18), indices},
            [padding](const std::vector<Tensor>& v) { return raw::embedding_backward(v[0], v[1], 10, padding); },
            Layout::strided, tolerance_for(dtype));
      }
    }
  }
  check_grad("embedding gradient", {random_values({7, 4}, DType::f32, 19), class_targets({3, 5}, 7, 20)},
             [](const std::vector<Tensor>& v) { return embedding(v[0], v[1], 2); }, tolerance_for(DType::f32),
             {true, false});
}

TEST_CASE("index_select, index_add_, gather and scatter_add_ over strided operands") {
  for (DType dtype :
       {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32, DType::u8, DType::boolean}) {
    const Tensor input = random_values({6, 5, 4}, dtype, 21);
    for (int64_t dim : {0, 1, 2}) {
      const std::string what = std::string(dtype_name(dtype)) + " dim " + std::to_string(dim);
      const int64_t size = input.sizes()[dim];
      const Tensor list = class_targets({7}, size, 22);  // repeats
      check_op(
          "index_select " + what, {input, list},
          [dim](const std::vector<Tensor>& v) { return raw::index_select(v[0], dim, v[1]); }, Layout::transposed);
      Shape src_shape = input.sizes();
      src_shape[dim] = 7;
      check_op(
          "index_add_ " + what, {input, list, random_values(src_shape, dtype, 23)},
          [dim](const std::vector<Tensor>& v) { return raw::index_add(v[0], dim, v[1], v[2]); }, Layout::strided);
      Shape index_shape = {4, 3, 2};  // no larger than input and src except along dim
      index_shape[dim] = 3;
      const Tensor index = class_targets(index_shape, size, 24);
      check_op(
          "gather " + what, {input, index},
          [dim](const std::vector<Tensor>& v) { return raw::gather(v[0], dim, v[1]); }, Layout::transposed);
      check_op(
          "scatter_add " + what, {input, index, random_values({6, 5, 4}, dtype, 25)},
          [dim](const std::vector<Tensor>& v) { return raw::scatter_add(v[0], dim, v[1], v[2]); }, Layout::strided);
    }
  }
  check_op("index_select with int32 indices",
           {random_values({5, 3}, DType::f32, 26), raw::to(class_targets({4}, 5, 27), DType::i32)},
           [](const std::vector<Tensor>& v) { return raw::index_select(v[0], 0, v[1]); });
  const Tolerance tol = tolerance_for(DType::f32);
  check_grad(
      "index_select gradient", {random_values({6, 4}, DType::f32, 28), class_targets({5}, 6, 29)},
      [](const std::vector<Tensor>& v) { return index_select(v[0], 0, v[1]); }, tol);
  check_grad(
      "gather gradient", {random_values({6, 4}, DType::f32, 30), class_targets({6, 3}, 4, 31)},
      [](const std::vector<Tensor>& v) { return gather(v[0], 1, v[1]); }, tol);
  check_grad(
      "scatter_add gradient",
      {random_values({6, 4}, DType::f32, 32), class_targets({3, 4}, 6, 33), random_values({3, 4}, DType::f32, 34)},
      [](const std::vector<Tensor>& v) { return scatter_add(v[0], 0, v[1], v[2]); }, tol);
}

TEST_CASE("dropout masks and random factories draw the CPU's numbers from the same generator state") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (double p : {0.0, 0.3, 1.0}) {
      const Tensor x = random_values({33, 17}, dtype, 35);
      Generator cpu_gen(36), cuda_gen(36);
      const raw::DropoutResult expected = raw::dropout(x, p, &cpu_gen);
      const raw::DropoutResult result = raw::dropout(place(x, kCuda0, Layout::transposed), p, &cuda_gen);
      INFO("dropout p = " << p << " " << dtype_name(dtype));
      CHECK_EMPTY(mismatch(result.mask, expected.mask, {0, 0}));
      CHECK_EMPTY(mismatch(result.output, expected.output, tolerance_for(dtype)));
    }
    Generator a(37), b(37);
    CHECK_EMPTY(
        mismatch(rand({1000}, {.dtype = dtype, .device = kCuda0}, &a), rand({1000}, {.dtype = dtype}, &b), {0, 0}));
    CHECK_EMPTY(mismatch(randn({1000}, {.dtype = dtype, .device = kCuda0}, &a), randn({1000}, {.dtype = dtype}, &b),
                         tolerance_for(dtype)));
  }
  for (DType dtype : {DType::i64, DType::i32, DType::u8, DType::f32}) {
    Generator a(38), b(38);
    CHECK_EMPTY(mismatch(randint(3, 200, {500}, {.dtype = dtype, .device = kCuda0}, &a),
                         randint(3, 200, {500}, {.dtype = dtype}, &b), {0, 0}));
  }
  check_grad(
      "dropout gradient", {random_values({9, 8}, DType::f32, 39)},
      [](const std::vector<Tensor>& v) {
        Generator gen(40);
        return dropout(v[0], 0.4, true, &gen);
      },
      tolerance_for(DType::f32));
}

TEST_CASE("scaled dot-product attention forward and backward, causal or not, match the CPU kernel") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (bool causal : {false, true}) {
      // q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev) with L != S, so the causal mask's alignment shows.
      const std::vector<Tensor> inputs = {random_values({2, 3, 5, 4}, dtype, 21), random_values({2, 3, 7, 4}, dtype, 22),
                                          random_values({2, 3, 7, 6}, dtype, 23)};
      const std::string what = std::string("attention ") + dtype_name(dtype) + (causal ? " causal" : "");
      check_op(
          what, inputs,
          [causal](const std::vector<Tensor>& v) { return raw::scaled_dot_product_attention(v[0], v[1], v[2], causal).out; },
          Layout::transposed, tolerance_for(dtype));
      check_grad(
          what + " gradient", inputs,
          [causal](const std::vector<Tensor>& v) { return scaled_dot_product_attention(v[0], v[1], v[2], causal); },
          tolerance_for(dtype));
    }
  }
}
