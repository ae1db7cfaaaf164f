// nn::Module: registries and dotted names, registration errors, state_dict layout and round trip,
// load_state_dict's error report, train/eval propagation, in-place to(dtype), zero_grad and printing.
#include <doctest/doctest.h>

#include "syncgrad.h"
#include "tests/nn/helpers.h"

using namespace syncgrad;
using namespace syncgrad::nn_test;

namespace {

// A module with its own parameter and buffer plus nested children: exercises every registry.
class Block : public nn::Module {
 public:
  explicit Block(Generator* gen)
      : Module("Block"),
        scale(register_parameter("scale", ones({3}))),
        steps(register_buffer("steps", zeros({}, {.dtype = DType::i64}))),
        body(register_module("body", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<Module>>{
                                         std::make_shared<nn::Linear>(4, 3, true, gen),
                                         std::make_shared<nn::BatchNorm1d>(3)}))),
        head(register_module("head", std::make_shared<nn::Linear>(3, 2, false, gen))) {}

  Tensor forward(const Tensor& input) override { return head->forward(body->forward(input) * scale); }

  Tensor scale, steps;
  std::shared_ptr<nn::Sequential> body;
  std::shared_ptr<nn::Linear> head;
};

}  // namespace

TEST_CASE("nn::Module: registries give dotted names in registration order") {
  Generator gen(1);
  Block block(&gen);
  CHECK(keys_of(block.named_parameters()) ==
        std::vector<std::string>{"scale", "body.0.weight", "body.0.bias", "body.1.weight", "body.1.bias",
                                 "head.weight"});
  CHECK(keys_of(block.named_parameters(false)) == std::vector<std::string>{"scale"});
  CHECK(keys_of(block.named_buffers()) ==
        std::vector<std::string>{"steps", "body.1.running_mean", "body.1.running_var", "body.1.num_batches_tracked"});
  auto children = block.named_children();
  REQUIRE(children.size() == 2);
  CHECK(children[0].first == "body");
  CHECK(children[0].second.get() == block.body.get());
  CHECK(children[1].first == "head");
  std::vector<Tensor> params = block.parameters();
  REQUIRE(params.size() == 6);
  CHECK(params[0].is_same(block.scale));
  CHECK(params[5].is_same(block.head->weight));
  for (const Tensor& p : params) CHECK(p.requires_grad());
  CHECK_FALSE(block.steps.requires_grad());
  CHECK_FALSE(block.head->bias.defined());
}

TEST_CASE("nn::Module: shared parameters are listed once, state_dict keeps every key") {
  auto a = std::make_shared<nn::Linear>(2, 2);
  nn::Sequential seq{a, a};
  CHECK(keys_of(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias"});
  CHECK(keys_of(seq.state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
}

TEST_CASE("nn::Module: registration errors name the module and the problem") {
  nn::Linear lin(2, 3);
  std::string dup = error_of<ValueError>([&] { lin.register_parameter("weight", zeros({1})); });
  CHECK(contains(dup, "Linear.register_parameter"));
  CHECK(contains(dup, "\"weight\" is already registered"));
  CHECK(contains(error_of<ValueError>([&] { lin.register_buffer("bias", zeros({1})); }), "already registered"));
  CHECK(contains(error_of<ValueError>([&] { lin.register_buffer("a.b", zeros({1})); }), "contain no '.'"));
  CHECK(contains(error_of<ValueError>([&] { lin.register_parameter("", zeros({1})); }), "non-empty"));
  CHECK(contains(error_of<ValueError>([&] { lin.register_parameter("extra", Tensor()); }), "undefined"));
  CHECK(contains(error_of<ValueError>([&] { lin.register_module("child", std::shared_ptr<nn::ReLU>()); }),
                 "null module"));
  CHECK_THROWS_AS(lin.register_parameter("ints", zeros({2}, {.dtype = DType::i64})), AutogradError);
}

TEST_CASE("nn::Module: a registered non-leaf becomes a leaf; requires_grad=false is honoured") {
  nn::Module m("Custom");
  Tensor base = ones({2}, {.requires_grad = true});
  Tensor& p = m.register_parameter("p", base * 2.0);
  CHECK(p.is_leaf());
  CHECK(p.requires_grad());
  Tensor& frozen = m.register_parameter("frozen", ones({2}), false);
  CHECK_FALSE(frozen.requires_grad());
  CHECK(keys_of(m.named_parameters()) == std::vector<std::string>{"p", "frozen"});
}

TEST_CASE("nn::Module: the default forward throws naming the type") {
  nn::ModuleList list{std::make_shared<nn::ReLU>()};
  std::string msg = error_of<Error>([&] { list(ones({1})); });
  CHECK(contains(msg, "ModuleList.forward"));
  CHECK(contains(msg, "no single-input forward"));
}

TEST_CASE("nn::Module: state_dict uses PyTorch's key order and shares data") {
  nn::Sequential seq{std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::BatchNorm1d>(2)};
  nn::StateDict state = seq.state_dict();
  CHECK(keys_of(state) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                                   "1.running_var", "1.num_batches_tracked"});
  auto lin = std::static_pointer_cast<nn::Linear>(seq[0]);
  CHECK(state[0].second.data_ptr() == lin->weight.data_ptr());
  CHECK_FALSE(state[0].second.requires_grad());
  CHECK(state[6].second.dtype() == DType::i64);
}

TEST_CASE("nn::Module: load_state_dict round trip copies values into the same tensors") {
  Generator g1(1), g2(2);
  Block source(&g1), target(&g2);
  {
    NoGradGuard no_grad;
    raw::fill_(source.body->operator[](1)->named_buffers()[0].second, 0.25);  // running_mean
    raw::fill_(source.steps, 7);
  }
  std::vector<Tensor> handles = target.parameters();
  target.load_state_dict(source.state_dict());
  nn::StateDict want = source.state_dict(), got = target.state_dict();
  REQUIRE(keys_of(want) == keys_of(got));
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].first);
    check_close(values(got[i].second), values(want[i].second), 0);
  }
  std::vector<Tensor> after = target.parameters();
  for (size_t i = 0; i < handles.size(); ++i) CHECK(after[i].is_same(handles[i]));
  CHECK(target.steps.item<int64_t>() == 7);
  CHECK(target.head->weight.requires_grad());
}

TEST_CASE("nn::Module: load_state_dict converts between floating dtypes") {
  nn::Linear lin(2, 2);
  nn::StateDict state = {{"weight", tensor({1.0, 2.0, 3.0, 4.0}).reshape({2, 2})}, {"bias", tensor({5.0, 6.0})}};
  lin.load_state_dict(state);
  CHECK(lin.weight.dtype() == DType::f32);
  check_close(values(lin.weight), {1, 2, 3, 4}, 0);
  check_close(values(lin.bias), {5, 6}, 0);
}

TEST_CASE("nn::Module: load_state_dict lists every bad key and copies nothing") {
  nn::Sequential seq{std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::BatchNorm1d>(2)};
  std::vector<double> before = values(std::static_pointer_cast<nn::Linear>(seq[0])->bias);
  nn::StateDict state = seq.state_dict();
  nn::StateDict bad;
  for (auto& [key, value] : state) {
    if (key == "0.weight") continue;                                                      // missing
    if (key == "1.running_var") continue;                                                 // missing
    if (key == "0.bias") bad.emplace_back(key, zeros({3}));                               // mis-shaped
    else if (key == "1.num_batches_tracked") bad.emplace_back(key, zeros({}));            // mis-typed
    else bad.emplace_back(key, value);
  }
  bad.emplace_back("2.weight", zeros({1}));  // unexpected
  bad.emplace_back("extra", zeros({1}));     // unexpected
  std::string msg = error_of<ShapeError>([&] { seq.load_state_dict(bad); });
  CHECK(contains(msg, "Sequential.load_state_dict"));
  CHECK(contains(msg, "missing keys: \"0.weight\", \"1.running_var\""));
  CHECK(contains(msg, "unexpected keys: \"2.weight\", \"extra\""));
  CHECK(contains(msg, "\"0.bias\" (shape [3] in the state, [2] in the module)"));
  CHECK(contains(msg, "\"1.num_batches_tracked\" (dtype float32 in the state, int64 in the module)"));
  check_close(values(std::static_pointer_cast<nn::Linear>(seq[0])->bias), before, 0);

  // Without a shape problem the report is a ValueError; non-strict ignores missing and unexpected keys only.
  nn::StateDict only_unexpected = state;
  only_unexpected.emplace_back("extra", zeros({1}));
  CHECK(contains(error_of<ValueError>([&] { seq.load_state_dict(only_unexpected); }), "unexpected keys: \"extra\""));
  CHECK_NOTHROW(seq.load_state_dict(only_unexpected, false));
  nn::StateDict partial(state.begin() + 1, state.end());
  CHECK_NOTHROW(seq.load_state_dict(partial, false));
  CHECK(contains(error_of<ValueError>([&] { seq.load_state_dict(partial); }), "missing keys: \"0.weight\""));
  nn::StateDict misshaped_non_strict = {{"0.bias", zeros({5})}};
  CHECK(contains(error_of<ShapeError>([&] { seq.load_state_dict(misshaped_non_strict, false); }), "\"0.bias\""));
  nn::StateDict duplicated = state;
  duplicated.push_back(state[0]);
  CHECK(contains(error_of<ValueError>([&] { seq.load_state_dict(duplicated); }), "duplicated keys: \"0.weight\""));
}

TEST_CASE("nn::Module: train/eval reach every descendant") {
  Generator gen(3);
  Block block(&gen);
  CHECK(block.is_training());
  block.eval();
  CHECK_FALSE(block.is_training());
  CHECK_FALSE(block.body->is_training());
  CHECK_FALSE(block.body->operator[](1)->is_training());
  block.train();
  CHECK(block.body->operator[](1)->is_training());
}

TEST_CASE("nn::Module: to(dtype) converts in place and keeps every handle") {
  Generator gen(4);
  Block block(&gen);
  std::vector<Tensor> handles = block.parameters();
  std::vector<std::vector<double>> before;
  for (const Tensor& p : handles) before.push_back(values(p));
  Tensor x = randn({5, 4}, {}, &gen);
  block(x).sum().backward();
  block.to(DType::f64);
  std::vector<Tensor> after = block.parameters();
  REQUIRE(after.size() == handles.size());
  for (size_t i = 0; i < handles.size(); ++i) {
    CHECK(after[i].is_same(handles[i]));
    CHECK(handles[i].dtype() == DType::f64);
    CHECK(handles[i].requires_grad());
    CHECK(handles[i].is_leaf());
    CHECK(handles[i].grad().dtype() == DType::f64);
    check_close(values(handles[i]), before[i], 0);
  }
  CHECK(block.steps.dtype() == DType::i64);
  CHECK(block.named_buffers()[3].second.dtype() == DType::i64);   // num_batches_tracked
  CHECK(block.named_buffers()[1].second.dtype() == DType::f64);   // running_mean
  // The old handles (what an optimizer holds) receive the new gradients.
  block.zero_grad();
  CHECK_FALSE(handles[0].grad().defined());
  block(raw::to(x, DType::f64)).sum().backward();
  for (const Tensor& p : handles) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().dtype() == DType::f64);
  }
  CHECK(contains(error_of<DTypeError>([&] { block.to(DType::i64); }), "floating dtypes only"));
  block.to(kCPU);
  CHECK(block.parameters()[0].is_same(handles[0]));
}

TEST_CASE("nn::Module: zero_grad drops or zeroes gradients") {
  nn::Linear lin(3, 2);
  lin(ones({1, 3})).sum().backward();
  lin.zero_grad(false);
  check_close(values(lin.weight.grad()), std::vector<double>(6, 0.0), 0);
  lin.zero_grad();
  CHECK_FALSE(lin.weight.grad().defined());
  CHECK_FALSE(lin.bias.grad().defined());
}

TEST_CASE("nn::Module: to_string prints a PyTorch-like tree") {
  nn::Sequential seq{std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                         std::make_shared<nn::Dropout>(0.25)})};
  CHECK(seq.to_string() ==
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.25)\n"
        "  )\n"
        ")");
}

TEST_CASE("consume_prefix_if_present strips a prefix only when every key has it") {
  nn::StateDict wrapped = {{"module.fc.weight", zeros({2})}, {"module.fc.bias", zeros({1})}};
  nn::consume_prefix_if_present(wrapped, "module.");
  CHECK(wrapped[0].first == "fc.weight");
  CHECK(wrapped[1].first == "fc.bias");
  nn::StateDict mixed = {{"module.fc.weight", zeros({2})}, {"fc.bias", zeros({1})}};
  nn::consume_prefix_if_present(mixed, "module.");
  CHECK(mixed[0].first == "module.fc.weight");
  nn::StateDict empty;
  nn::consume_prefix_if_present(empty, "module.");
  CHECK(empty.empty());
}
