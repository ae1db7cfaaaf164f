// nn::checkpoint: gradients bit for bit those of the run without checkpointing (GPT with dropout, under bf16
// autocast, a ResNet stage with BatchNorm whose running statistics move once), nested checkpoints, inputs that
// need no gradient, several outputs, the generators left where the forward left them, less peak memory, and
// the errors.
#include <doctest/doctest.h>

#include "tests/nn/helpers.h"

using namespace syncgrad;
using syncgrad::nn_test::contains;
using syncgrad::nn_test::error_of;

namespace {

// Every named tensor of `a` equals `b`'s bit for bit (both float32 or both bf16: compared as stored).
void check_identical(const nn::StateDict& a, const nn::StateDict& b, const char* what) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(what << " " << a[i].first);
    REQUIRE(a[i].first == b[i].first);
    REQUIRE(a[i].second.defined() == b[i].second.defined());
    if (!a[i].second.defined()) continue;
    CHECK(to_vector<double>(a[i].second) == to_vector<double>(b[i].second));
  }
}

nn::StateDict grads_of(const nn::Module& model) {
  nn::StateDict grads;
  for (const auto& [name, p] : model.named_parameters()) grads.emplace_back(name, p.grad());
  return grads;
}

models::GPTConfig small_gpt(double dropout) {
  return models::GPTConfig::parse("vocab_size=64,block_size=16,n_layer=3,n_head=2,n_embd=32,dropout=" +
                                  std::to_string(dropout));
}

// One forward and backward of `model` on a fixed batch with the default generator at `seed` (dropout masks).
Tensor gpt_step(models::GPT& model, uint64_t seed, bool bf16 = false) {
  Generator data(11);
  Tensor tokens = randint(0, 64, {2, 16}, {.dtype = DType::i64}, &data);
  Tensor targets = randint(0, 64, {2 * 16}, {.dtype = DType::i64}, &data);
  manual_seed(seed);
  Tensor loss;
  {
    auto amp = autocast(DeviceType::kCPU, DType::bf16, bf16);
    loss = cross_entropy(model.forward(tokens).reshape({2 * 16, 64}), targets);
  }
  loss.backward();
  return loss;
}

}  // namespace

TEST_CASE("checkpoint: a GPT with dropout gets the gradients of the run without checkpointing, bit for bit") {
  for (bool bf16 : {false, true}) {
    INFO("bf16 autocast: " << bf16);
    Generator g1(3), g2(3);
    models::GPT plain(small_gpt(0.2), &g1), checkpointed(small_gpt(0.2), &g2);
    checkpointed.activation_checkpointing = true;
    const Tensor loss_plain = gpt_step(plain, 5, bf16);
    const uint64_t offset_plain = default_generator().offset();
    const Tensor loss_checkpointed = gpt_step(checkpointed, 5, bf16);
    CHECK(default_generator().offset() == offset_plain);  // the recomputation put the generator back
    CHECK(loss_plain.item<float>() == loss_checkpointed.item<float>());
    check_identical(grads_of(plain), grads_of(checkpointed), "grad");
    // Dropout really drew masks: another seed changes the gradients.
    plain.zero_grad();
    gpt_step(plain, 6, bf16);
    CHECK(to_vector<double>(plain.transformer->blocks[0]->attn->c_attn->weight.grad()) !=
          to_vector<double>(checkpointed.transformer->blocks[0]->attn->c_attn->weight.grad()));
  }
}

TEST_CASE("checkpoint: a ResNet stage with BatchNorm: same gradients, running statistics updated once") {
  models::ResNetConfig config{.widths = {4, 8}, .blocks = {2, 1}};
  Generator g1(4), g2(4), data(9);
  models::ResNet plain(config, &g1), checkpointed(config, &g2);
  checkpointed.activation_checkpointing = true;
  for (int step = 0; step < 2; ++step) {
    Tensor x = randn({3, 3, 8, 8}, {}, &data);
    Tensor y = randint(0, 10, {3}, {.dtype = DType::i64}, &data);
    for (models::ResNet* model : {&plain, &checkpointed}) {
      model->zero_grad();
      cross_entropy(model->forward(x), y).backward();
    }
    check_identical(grads_of(plain), grads_of(checkpointed), "grad");
    check_identical(plain.named_buffers(), checkpointed.named_buffers(), "buffer");
  }
  for (const auto& [name, buffer] : checkpointed.named_buffers()) {
    INFO(name);
    if (contains(name, "num_batches_tracked")) CHECK(buffer.item<int64_t>() == 2);  // two steps, not four
  }
}

TEST_CASE("checkpoint: nested checkpoints, inputs without gradient, several outputs") {
  Generator g(8);
  nn::Linear a(6, 6, true, &g), b(6, 6, true, &g);
  Tensor x = randn({4, 6}, {}, &g);  // needs no gradient: the layers' parameters still get theirs
  auto run = [&](bool checkpointed) {
    a.zero_grad();
    b.zero_grad();
    auto inner = [&](const Tensor& h) { return tanh(b.forward(h)); };
    auto outer = [&](const std::vector<Tensor>& in) {
      Tensor h = tanh(a.forward(in[0]));
      Tensor deeper = checkpointed ? nn::checkpoint(inner, h) : inner(h);
      return std::vector<Tensor>{deeper, mul(h, in[1]), argmax(h, 1)};
    };
    Tensor scale = full({4, 6}, 0.5);
    scale.requires_grad_();
    std::vector<Tensor> out = checkpointed ? nn::checkpoint(outer, {x, scale}) : outer({x, scale});
    CHECK(out.size() == 3);
    CHECK(out[0].requires_grad());
    CHECK_FALSE(out[2].requires_grad());  // integral outputs carry no gradient
    add(sum(mul(out[0], out[0])), sum(out[1])).backward();
    nn::StateDict grads = grads_of(a);
    for (auto& entry : grads_of(b)) grads.push_back(entry);
    grads.emplace_back("scale", scale.grad());
    return grads;
  };
  check_identical(run(false), run(true), "grad");
}

TEST_CASE("checkpoint: an unused output, no-grad mode, a second backward and bad functions") {
  Generator g(2);
  nn::Linear layer(3, 3, true, &g);
  Tensor x = randn({2, 3}, {}, &g).requires_grad_();
  auto two = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{layer.forward(in[0]), relu(in[0])};
  };
  std::vector<Tensor> out = nn::checkpoint(two, {x});
  sum(out[0]).backward();  // out[1] gets no gradient
  CHECK(x.grad().defined());
  CHECK(contains(error_of<AutogradError>([&] { sum(out[0]).backward(); }), "second time"));
  {
    NoGradGuard no_grad;
    CHECK_FALSE(nn::checkpoint(layer, x).requires_grad());
  }
  CHECK(contains(error_of<ValueError>([&] { nn::checkpoint(nn::CheckpointFunction(), {x}); }), "empty"));
  CHECK(contains(error_of<ValueError>([&] {
                   nn::checkpoint([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; }, {x});
                 }),
                 "returned no tensor"));
  // A function that does not compute the same thing twice is caught at the recomputation.
  int calls = 0;
  auto changing = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> result{mul(in[0], 2.0)};
    if (calls++ > 0) result.push_back(in[0]);
    return result;
  };
  Tensor y = nn::checkpoint(changing, {x})[0];
  CHECK(contains(error_of<AutogradError>([&] { sum(y).backward(); }), "compute the same thing twice"));
}

TEST_CASE("checkpoint: the GPT's peak memory during forward and backward drops") {
  models::GPTConfig config = models::GPTConfig::parse("vocab_size=64,block_size=64,n_layer=6,n_head=2,n_embd=64");
  auto peak_of = [&](bool checkpointed) {
    Generator g(1);
    models::GPT model(config, &g);
    model.activation_checkpointing = checkpointed;
    Generator data(2);
    Tensor tokens = randint(0, 64, {4, 64}, {.dtype = DType::i64}, &data);
    MemoryTagGuard tag(7);
    const size_t before = memory_tag_stats(7).allocated_bytes;
    reset_memory_tag_peaks();
    sum(model.forward(tokens)).backward();
    return memory_tag_stats(7).peak_allocated_bytes - before;
  };
  const size_t plain = peak_of(false), checkpointed = peak_of(true);
  MESSAGE("peak during forward+backward: " << plain << " bytes without checkpointing, " << checkpointed << " with");
  CHECK(checkpointed * 3 < plain * 2);
}
