// nn layers: default initialisation (bounds and statistics), init helpers, forward values against the
// functional ops or hand-computed numbers, train/eval effects (dropout, batch norm running statistics),
// containers and loss modules.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "syncgrad.h"
#include "tests/nn/helpers.h"

using namespace syncgrad;
using namespace syncgrad::nn_test;
namespace F = syncgrad::nn::functional;

namespace {

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

double variance_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / v.size();
}

// Values within [-bound, bound], reaching close to it, with the variance of U(-bound, bound).
void check_uniform(const Tensor& t, double bound) {
  std::vector<double> v = values(t);
  CHECK(max_abs(v) <= bound);
  CHECK(max_abs(v) > 0.9 * bound);
  CHECK(variance_of(v) == doctest::Approx(bound * bound / 3).epsilon(0.1));
}

}  // namespace

TEST_CASE("nn::Linear: shapes and PyTorch's default initialisation bounds") {
  Generator gen(0);
  nn::Linear lin(400, 50, true, &gen);
  CHECK(lin.weight.sizes() == Shape{50, 400});
  CHECK(lin.bias.sizes() == Shape{50});
  CHECK(lin.weight.dtype() == DType::f32);
  check_uniform(lin.weight, 1.0 / std::sqrt(400.0));
  std::vector<double> b = values(lin.bias);
  CHECK(max_abs(b) <= 0.05);
  CHECK(max_abs(b) > 0.03);
  // The same generator state gives the same parameters.
  Generator again(0);
  nn::Linear twin(400, 50, true, &again);
  check_close(values(twin.weight), values(lin.weight), 0);
  nn::Linear no_bias(3, 2, false);
  CHECK_FALSE(no_bias.bias.defined());
  CHECK(no_bias.named_parameters().size() == 1);
}

TEST_CASE("nn::Linear: forward equals x W^T + b, for (N, in) and (A, B, in)") {
  nn::Linear lin(2, 2);
  lin.load_state_dict({{"weight", tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2})}, {"bias", tensor({0.5f, -1.f})}});
  check_close(values(lin(tensor({1.f, 1.f, 2.f, 0.f}).reshape({2, 2}))), {3.5, 6, 2.5, 5});
  CHECK(lin(ones({3, 4, 2})).sizes() == Shape{3, 4, 2});
  CHECK_THROWS_AS(lin(ones({2, 3})), ShapeError);
}

TEST_CASE("nn::Conv2d: shapes, initialisation bounds and forward equal to conv2d") {
  Generator gen(1);
  nn::Conv2d conv(6, 16, 3, 1, 1, 1, 2, true, &gen);  // groups 2: fan_in = 3 * 3 * 3 = 27
  CHECK(conv.weight.sizes() == Shape{16, 3, 3, 3});
  CHECK(conv.bias.sizes() == Shape{16});
  check_uniform(conv.weight, 1.0 / std::sqrt(27.0));
  CHECK(max_abs(values(conv.bias)) <= 1.0 / std::sqrt(27.0));
  Tensor x = randn({2, 6, 5, 5}, {}, &gen);
  Tensor y = conv(x);
  CHECK(y.sizes() == Shape{2, 16, 5, 5});
  check_close(values(y), values(F::conv2d(x, conv.weight, conv.bias, 1, 1, 1, 2)), 0);
  nn::Conv2d strided(1, 2, {3, 2}, 2, 0, 1, 1, false);
  CHECK(strided(ones({1, 1, 7, 6})).sizes() == Shape{1, 2, 3, 3});
  CHECK(contains(error_of<ValueError>([] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }), "divisible by groups=2"));
  CHECK(contains(error_of<ValueError>([] { nn::Conv2d(3, 4, 0); }), "kernel_size=(0, 0)"));
}

TEST_CASE("nn::init: fans, gains, bounds, strided targets and errors") {
  CHECK(nn::init::calculate_fan_in_and_fan_out(empty({8, 3, 5, 5})) == std::pair<int64_t, int64_t>{75, 200});
  CHECK(nn::init::calculate_fan_in_and_fan_out(empty({4, 6})) == std::pair<int64_t, int64_t>{6, 4});
  CHECK(contains(error_of<ValueError>([] { nn::init::calculate_fan_in_and_fan_out(empty({4})); }),
                 "fewer than 2 dimensions"));
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::relu) == doctest::Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::tanh) == doctest::Approx(5.0 / 3.0));
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::leaky_relu, std::sqrt(5.0)) ==
        doctest::Approx(std::sqrt(1.0 / 3.0)));

  Generator gen(2);
  Tensor w = empty({200, 100}, {.dtype = DType::f64});
  nn::init::xavier_uniform_(w, 1.0, &gen);
  check_uniform(w, std::sqrt(6.0 / 300.0));
  nn::init::kaiming_uniform_(w, 0.0, nn::init::FanMode::fan_out, nn::init::Nonlinearity::relu, &gen);
  check_uniform(w, std::sqrt(2.0) * std::sqrt(3.0 / 200.0));
  nn::init::kaiming_normal_(w, 0.0, nn::init::FanMode::fan_in, nn::init::Nonlinearity::relu, &gen);
  CHECK(std::sqrt(variance_of(values(w))) == doctest::Approx(std::sqrt(2.0 / 100.0)).epsilon(0.05));
  nn::init::normal_(w, 3.0, 0.5, &gen);
  CHECK(mean_of(values(w)) == doctest::Approx(3.0).epsilon(0.01));
  CHECK(std::sqrt(variance_of(values(w))) == doctest::Approx(0.5).epsilon(0.05));

  // A transposed (non-contiguous) bf16 target is filled through its strides.
  Tensor base = zeros({30, 40}, {.dtype = DType::bf16});
  Tensor view = raw::transpose(base, 0, 1);
  nn::init::uniform_(view, 2.0, 3.0, &gen);
  std::vector<double> v = values(base);
  CHECK(*std::min_element(v.begin(), v.end()) >= 2.0);
  CHECK(*std::max_element(v.begin(), v.end()) <= 3.0);
  nn::init::ones_(view);
  check_close(values(base), std::vector<double>(1200, 1.0), 0);
  nn::init::zeros_(base);
  check_close(values(base), std::vector<double>(1200, 0.0), 0);

  uint64_t offset = gen.offset();
  nn::init::uniform_(empty({10}), 0, 1, &gen);
  CHECK(gen.offset() == offset + 10);
  CHECK(contains(error_of<DTypeError>([] { nn::init::uniform_(zeros({3}, {.dtype = DType::i64})); }), "int64"));
  CHECK(contains(error_of<ValueError>([] { nn::init::uniform_(empty({3}), 1.0, 0.0); }), "exceeds high"));
  CHECK(contains(error_of<ValueError>([] { nn::init::normal_(empty({3}), 0.0, -1.0); }), "std must be >= 0"));
}

TEST_CASE("nn::Dropout: training zeroes and rescales, eval is the identity") {
  Generator gen(5);
  nn::Dropout drop(0.5, &gen);
  Tensor x = ones({1000});
  std::vector<double> y = values(drop(x));
  int64_t zeros_count = std::count(y.begin(), y.end(), 0.0);
  CHECK(std::count(y.begin(), y.end(), 2.0) + zeros_count == 1000);
  CHECK(zeros_count > 400);
  CHECK(zeros_count < 600);
  drop.eval();
  Tensor same = drop(x);
  check_close(values(same), std::vector<double>(1000, 1.0), 0);
  CHECK(contains(error_of<ValueError>([] { nn::Dropout(1.5); }), "[0, 1]"));
  CHECK(drop.to_string() == "Dropout(p=0.5)");
}

TEST_CASE("nn::BatchNorm1d: batch statistics, running statistics and eval") {
  nn::BatchNorm1d bn(2);
  check_close(values(bn.weight), {1, 1}, 0);
  check_close(values(bn.bias), {0, 0}, 0);
  check_close(values(bn.running_mean), {0, 0}, 0);
  check_close(values(bn.running_var), {1, 1}, 0);
  CHECK(bn.num_batches_tracked.dtype() == DType::i64);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 0);

  // Channel 0: 1, 2, 3, 6 (mean 3, biased var 3.5, unbiased 14/3); channel 1: 0, 0, 4, 4 (mean 2, var 4, 16/3).
  Tensor x = tensor({1.f, 0.f, 2.f, 0.f, 3.f, 4.f, 6.f, 4.f}).reshape({4, 2});
  Tensor y = bn(x);
  double s0 = std::sqrt(3.5 + 1e-5), s1 = std::sqrt(4.0 + 1e-5);
  check_close(values(y), {-2 / s0, -2 / s1, -1 / s0, -2 / s1, 0, 2 / s1, 3 / s0, 2 / s1}, 1e-5);
  check_close(values(bn.running_mean), {0.3, 0.2}, 1e-6);
  check_close(values(bn.running_var), {0.9 + 0.1 * 14.0 / 3.0, 0.9 + 0.1 * 16.0 / 3.0}, 1e-6);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
  bn(x);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 2);
  check_close(values(bn.running_mean), {0.3 * 0.9 + 0.3, 0.2 * 0.9 + 0.2}, 1e-6);

  bn.eval();
  std::vector<double> rm = values(bn.running_mean), rv = values(bn.running_var);
  Tensor z = bn(x);
  std::vector<double> xs = values(x), expected;
  for (size_t i = 0; i < xs.size(); ++i) expected.push_back((xs[i] - rm[i % 2]) / std::sqrt(rv[i % 2] + 1e-5));
  check_close(values(z), expected, 1e-5);
  CHECK(bn.num_batches_tracked.item<int64_t>() == 2);
  check_close(values(bn.running_mean), rm, 0);

  CHECK(contains(error_of<ShapeError>([&] { bn(ones({4, 3})); }), "3 channels"));
  CHECK(contains(error_of<ShapeError>([&] { bn(ones({4})); }), "expected 2-D or 3-D input"));
  CHECK(bn.to_string() == "BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
}

TEST_CASE("nn::BatchNorm: cumulative momentum, no running stats, BatchNorm2d") {
  nn::BatchNorm1d cumulative(1, 1e-5, std::nullopt);
  cumulative(tensor({1.f, 3.f}).reshape({2, 1}));  // mean 2
  cumulative(tensor({5.f, 7.f}).reshape({2, 1}));  // mean 6
  check_close(values(cumulative.running_mean), {4.0}, 1e-6);  // the average of both batch means

  nn::BatchNorm1d untracked(2, 1e-5, 0.1, false, false);
  CHECK(untracked.named_parameters().empty());
  CHECK(untracked.named_buffers().empty());
  untracked.eval();
  Tensor x = tensor({1.f, 0.f, 3.f, 2.f}).reshape({2, 2});
  check_close(values(untracked(x)), {-1, -1, 1, 1}, 1e-4);  // batch statistics even in eval

  nn::BatchNorm2d bn2(3);
  CHECK(keys_of(bn2.state_dict()) ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  Generator gen(7);
  Tensor img = randn({2, 3, 4, 4}, {}, &gen);
  check_close(values(bn2(img)), values(F::batch_norm(img, Tensor(), Tensor(), Tensor(), Tensor(), true)), 1e-6);
  CHECK(contains(error_of<ShapeError>([&] { bn2(ones({2, 3})); }), "expected 4-D input"));
}

TEST_CASE("nn::LayerNorm: initial affine parameters and forward equal to layer_norm") {
  nn::LayerNorm ln({2, 3});
  CHECK(ln.weight.sizes() == Shape{2, 3});
  check_close(values(ln.weight), std::vector<double>(6, 1.0), 0);
  check_close(values(ln.bias), std::vector<double>(6, 0.0), 0);
  Generator gen(8);
  Tensor x = randn({4, 2, 3}, {}, &gen);
  check_close(values(ln(x)), values(F::layer_norm(x, {2, 3})), 1e-6);
  nn::LayerNorm plain({3}, 1e-6, false);
  CHECK(plain.named_parameters().empty());
  CHECK(plain.to_string() == "LayerNorm((3,), eps=1e-06, elementwise_affine=False)");
}

TEST_CASE("nn::Embedding: N(0, 1) table, zero padding row, lookup") {
  Generator gen(9);
  nn::Embedding emb(500, 16, -1, &gen);
  CHECK(emb.padding_idx == 499);
  std::vector<double> w = values(emb.weight);
  check_close(std::vector<double>(w.end() - 16, w.end()), std::vector<double>(16, 0.0), 0);
  std::vector<double> body(w.begin(), w.end() - 16);
  CHECK(std::abs(mean_of(body)) < 0.05);
  CHECK(std::sqrt(variance_of(body)) == doctest::Approx(1.0).epsilon(0.05));
  Tensor idx = tensor({3, 0, 3}).reshape({3, 1});
  Tensor out = emb(idx);
  CHECK(out.sizes() == Shape{3, 1, 16});
  check_close(values(out.select(0, 0)), values(emb.weight.select(0, 3)), 0);
  CHECK(contains(error_of<ValueError>([] { nn::Embedding(4, 2, 4); }), "padding_idx 4 is outside [-4, 4)"));
}

TEST_CASE("nn activations, pooling and Flatten equal the functional ops") {
  Generator gen(10);
  Tensor x = randn({2, 3, 6, 6}, {}, &gen);
  check_close(values(nn::ReLU()(x)), values(F::relu(x)), 0);
  check_close(values(nn::GELU(GeluApproximate::tanh)(x)), values(F::gelu(x, GeluApproximate::tanh)), 0);
  check_close(values(nn::Tanh()(x)), values(F::tanh(x)), 0);
  check_close(values(nn::Sigmoid()(x)), values(F::sigmoid(x)), 0);
  check_close(values(nn::MaxPool2d(2)(x)), values(F::max_pool2d(x, 2)), 0);
  CHECK(nn::MaxPool2d(3, 1, 1)(x).sizes() == Shape{2, 3, 6, 6});
  check_close(values(nn::AvgPool2d(3, 2, 1, false, false)(x)), values(F::avg_pool2d(x, 3, 2, 1, false, false)), 0);
  check_close(values(nn::AdaptiveAvgPool2d(1)(x)), values(F::adaptive_avg_pool2d(x, 1)), 0);
  CHECK(nn::Flatten()(x).sizes() == Shape{2, 108});
  CHECK(nn::Flatten(0, 2)(x).sizes() == Shape{36, 6});
  CHECK(nn::MaxPool2d(2).to_string() ==
        "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), ceil_mode=False)");
  CHECK(nn::GELU().to_string() == "GELU(approximate='none')");
}

TEST_CASE("nn::Sequential: forward equals the manual chain; indexing and ModuleList") {
  Generator gen(11);
  auto l1 = std::make_shared<nn::Linear>(5, 4, true, &gen);
  auto act = std::make_shared<nn::Tanh>();
  auto l2 = std::make_shared<nn::Linear>(4, 2, true, &gen);
  nn::Sequential seq{l1, act};
  seq.push_back(l2);
  CHECK(seq.size() == 3);
  CHECK(seq[2].get() == l2.get());
  CHECK(keys_of(seq.named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  Tensor x = randn({3, 5}, {}, &gen);
  check_close(values(seq(x)), values(l2->forward(F::tanh(l1->forward(x)))), 0);
  check_close(values(nn::Sequential()(x)), values(x), 0);
  CHECK(contains(error_of<IndexError>([&] { seq[3]; }), "Sequential[3]: index out of range for 3 modules"));

  nn::ModuleList list;
  list.push_back(l1);
  list.push_back(l2);
  size_t count = 0;
  for (const auto& m : list) count += m->parameters().size();
  CHECK(count == 4);
  CHECK(list[1].get() == l2.get());
  CHECK(keys_of(list.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
  CHECK_THROWS_AS(list[2], IndexError);
}

TEST_CASE("nn loss modules equal the functional losses") {
  Generator gen(12);
  Tensor logits = randn({6, 4}, {}, &gen);
  Tensor target = tensor({0, 3, 1, 2, 2, -100});
  nn::CrossEntropyLoss ce(Reduction::mean, -100, 0.1);
  CrossEntropyOptions ce_options{.reduction = Reduction::mean, .ignore_index = -100, .label_smoothing = 0.1};
  check_close(values(ce(logits, target)), values(F::cross_entropy(logits, target, ce_options)), 0);
  nn::CrossEntropyLoss ce_sum(Reduction::sum, 2);
  Tensor plain_target = tensor({0, 3, 1, 2, 2, 1});
  check_close(values(ce_sum.forward(logits, plain_target)),
              values(F::cross_entropy(logits, plain_target, {.reduction = Reduction::sum, .ignore_index = 2})), 0);

  Tensor log_probs = F::log_softmax(logits, 1);
  nn::NLLLoss nll(Reduction::none);
  check_close(values(nll(log_probs, plain_target)),
              values(F::nll_loss(log_probs, plain_target, {.reduction = Reduction::none})), 0);
  // Hand check of the mean: -mean of the picked log-probabilities.
  std::vector<double> lp = values(log_probs);
  std::vector<int64_t> t = to_vector<int64_t>(plain_target);
  double expected = 0;
  for (size_t n = 0; n < t.size(); ++n) expected -= lp[n * 4 + t[n]] / 6.0;
  check_close(values(nn::NLLLoss()(log_probs, plain_target)), {expected}, 1e-6);

  Tensor a = randn({3, 2}, {}, &gen), b = randn({3, 2}, {}, &gen);
  check_close(values(nn::MSELoss()(a, b)), values(F::mse_loss(a, b)), 0);
  check_close(values(nn::MSELoss(Reduction::sum)(a, b)), values(F::mse_loss(a, b, Reduction::sum)), 0);
  CHECK(contains(error_of<Error>([&] { nn::MSELoss().forward(a); }), "MSELoss.forward"));
}
