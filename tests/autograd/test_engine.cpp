// The engine: gradient flow through views, accumulation across paths and across backward calls, hooks,
// post-accumulate hooks, end-of-backward callbacks, reachability, retain_graph, and the error cases.
#include <doctest/doctest.h>

#include "autograd/node.h"
#include "syncgrad.h"

using namespace syncgrad;

namespace {
Tensor param(const Shape& shape) {
  Tensor t = zeros(shape);
  t.requires_grad_(true);
  return t;
}
}  // namespace

TEST_CASE("gradients flow through views and sum where paths meet") {
  Tensor x = param({2, 3});
  Tensor a = x.view({6});
  Tensor b = x.transpose(0, 1);
  autograd::backward({a, b}, {arange(6).to(DType::f32), ones({3, 2})});
  CHECK(to_vector<float>(x.grad()) == std::vector<float>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("gradients accumulate across backward calls until reset") {
  Tensor x = param({3});
  x.view({3}).backward(ones({3}));
  x.view({3}).backward(ones({3}));
  CHECK(to_vector<float>(x.grad()) == std::vector<float>{2, 2, 2});
  x.set_grad(Tensor());
  x.view({3}).backward(ones({3}));
  CHECK(to_vector<float>(x.grad()) == std::vector<float>{1, 1, 1});
}

TEST_CASE("non-scalar backward without a gradient is an error naming the shape") {
  Tensor x = param({2, 2});
  try {
    x.view({4}).backward();
    FAIL("expected AutogradError");
  } catch (const AutogradError& e) {
    CHECK(std::string(e.what()).find("[4]") != std::string::npos);
  }
}

TEST_CASE("backward of a tensor without history is an error") {
  CHECK_THROWS_AS(zeros({1}).backward(), AutogradError);
  Tensor x = param({1});
  Tensor y;
  {
    NoGradGuard guard;
    y = x.view({1});
  }
  CHECK_FALSE(y.requires_grad());
  CHECK_THROWS_AS(y.backward(), AutogradError);
  CHECK_FALSE(x.detach().requires_grad());
}

TEST_CASE("a second backward through a freed graph is an error; retain_graph allows it") {
  Tensor x = param({2});
  Tensor y = x.unsqueeze(0);
  y.backward(ones({1, 2}));
  try {
    y.backward(ones({1, 2}));
    FAIL("expected AutogradError");
  } catch (const AutogradError& e) {
    CHECK(std::string(e.what()).find("second time") != std::string::npos);
  }
  Tensor z = x.unsqueeze(0);
  z.backward(ones({1, 2}), true);
  z.backward(ones({1, 2}));
  CHECK(to_vector<float>(x.grad()) == std::vector<float>{3, 3});
}

TEST_CASE("a backward without retain_graph frees what each node saved") {
  Tensor x = param({3});
  Tensor y = exp(x);  // its node saves y (an alias sharing y's storage)
  const long with_saved = y.impl()->storage().use_count();
  y.sum().backward({}, true);
  CHECK(y.impl()->storage().use_count() == with_saved);  // retained
  y.sum().backward();
  CHECK(y.impl()->storage().use_count() == with_saved - 1);
  CHECK(y.grad_fn()->released());
}

TEST_CASE("node types register at static initialization, each name for one backward") {
  // Registered whether or not any test ran them: the gradcheck coverage test relies on it.
  const auto& names = autograd::registered_node_types();
  for (const char* name : {"AccumulateGrad", "ExpBackward", "ReluBackward", "Conv2dBackward", "CatBackward"}) {
    CHECK_MESSAGE(names.count(name) == 1, name);
  }
  CHECK(autograd::duplicate_node_types().empty());
}

TEST_CASE("hooks: tensor hooks can replace gradients; post-accumulate hooks see the final grad") {
  Tensor x = param({2});
  std::vector<float> seen;
  int post_calls = 0;
  x.register_hook([](const Tensor& g) { return raw::mul(g, 10); });
  x.register_post_accumulate_grad_hook([&](const Tensor& p) {
    ++post_calls;
    seen = to_vector<float>(p.grad());
  });
  Tensor y = x.view({2});
  y.register_hook([](const Tensor& g) { return raw::add(g, 1); });
  y.backward(ones({2}));
  CHECK(post_calls == 1);
  CHECK(seen == std::vector<float>{20, 20});
  CHECK_THROWS_AS(y.register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
}

TEST_CASE("retain_grad keeps a non-leaf gradient") {
  Tensor x = param({2});
  Tensor y = x.view({2, 1});
  y.retain_grad();
  Tensor z = y.view({2});
  z.backward(tensor({3.f, 4.f}));
  CHECK(to_vector<float>(y.grad()) == std::vector<float>{3, 4});
}

TEST_CASE("end-of-backward callbacks run after every accumulation; reachability is known during backward") {
  Tensor used = param({2});
  Tensor unused = param({2});
  std::vector<std::string> order;
  bool used_reachable = false, unused_reachable = true;
  used.register_post_accumulate_grad_hook([&](const Tensor&) {
    order.push_back("accumulate");
    used_reachable = autograd::is_reachable(used);
    unused_reachable = autograd::is_reachable(unused);
    autograd::queue_callback([&] { order.push_back("callback"); });
  });
  used.view({2}).backward(ones({2}));
  CHECK(order == std::vector<std::string>{"accumulate", "callback"});
  CHECK(used_reachable);
  CHECK_FALSE(unused_reachable);
  CHECK_FALSE(autograd::in_backward());
  CHECK_THROWS_AS(autograd::queue_callback([] {}), AutogradError);
}

TEST_CASE("a backward nested in a node (checkpoint): callbacks wait for the outer backward, reachability spans both") {
  Tensor outer = param({2});
  Tensor inner = param({2});
  std::vector<std::string> order;
  bool outer_reachable = false;
  inner.register_post_accumulate_grad_hook([&](const Tensor&) {
    order.push_back("inner");
    outer_reachable = autograd::is_reachable(outer);
    autograd::queue_callback([&] { order.push_back("callback"); });
  });
  outer.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back("outer"); });
  Tensor h = mul(outer, 2.0);
  Tensor y = nn::checkpoint([&](const Tensor& x) { return mul(x, inner); }, h);
  sum(y).backward();
  CHECK(order == std::vector<std::string>{"inner", "outer", "callback"});
  CHECK(outer_reachable);
}

TEST_CASE("gradients arrive in reverse order of the forward pass") {
  // Three parameters used one after another; accumulation order must be newest first.
  Tensor p1 = param({2}), p2 = param({2}), p3 = param({2});
  std::vector<int> order;
  p1.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back(1); });
  p2.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back(2); });
  p3.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back(3); });
  Tensor a = p1.view({2});
  Tensor b = p2.view({2});
  Tensor c = p3.view({2});
  autograd::backward({a, b, c}, {ones({2}), ones({2}), ones({2})});
  CHECK(order == std::vector<int>{3, 2, 1});
}

TEST_CASE("copy_ into a leaf that requires grad is refused outside no_grad") {
  Tensor x = param({3});
  Tensor y = x.to(DType::f64);  // records a node; copy_ of a leaf is refused
  CHECK_THROWS_AS(copy_(x, ones({3})), AutogradError);
  {
    NoGradGuard guard;
    copy_(x, ones({3}));
  }
  CHECK(to_vector<float>(x) == std::vector<float>{1, 1, 1});
  y.backward(ones({3}, {.dtype = DType::f64}));
  CHECK(x.grad().dtype() == DType::f32);
}

TEST_CASE("autograd::grad returns gradients without touching .grad") {
  Tensor x = param({2});
  auto g = autograd::grad({x.view({2})}, {x}, {tensor({5.f, 6.f})});
  CHECK(to_vector<float>(g[0]) == std::vector<float>{5, 6});
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("requires_grad only for floating tensors") {
  CHECK_THROWS_AS(arange(3).requires_grad_(), AutogradError);
  Tensor x = param({1});
  CHECK(x.is_leaf());
  CHECK_FALSE(x.view({1}).is_leaf());
}

TEST_CASE("zero_grad sets gradients to none or to zero in place") {
  Tensor a = param({2}), b = param({2});
  autograd::backward({a.view({2}), b.view({2})}, {ones({2}), ones({2})});
  Tensor b_grad = b.grad();
  autograd::zero_grad({a}, true);
  autograd::zero_grad({b}, false);
  CHECK_FALSE(a.grad().defined());
  CHECK(b.grad().is_same(b_grad));
  CHECK(to_vector<float>(b.grad()) == std::vector<float>{0, 0});
}

TEST_CASE("in-place change of a tensor saved for backward is detected") {
  Tensor x = tensor({1.f, 2.f}).requires_grad_();
  Tensor w = tensor({3.f, 4.f}).requires_grad_();
  Tensor w2 = w * 1;       // a non-leaf: in-place on it is allowed
  Tensor y = x * w2;       // saves w2 for x's gradient
  {
    NoGradGuard guard;
    mul_(w2, 2);
  }
  try {
    y.sum().backward();
    FAIL("expected AutogradError");
  } catch (const AutogradError& e) {
    CHECK(std::string(e.what()).find("modified by an in-place operation") != std::string::npos);
  }
  // The same through a detached alias of a leaf, which shares its storage (and version counter).
  Tensor z = x * w;
  add_(w.detach(), 1);
  CHECK_THROWS_WITH_AS(z.sum().backward(), doctest::Contains("modified by an in-place operation"), AutogradError);
}
