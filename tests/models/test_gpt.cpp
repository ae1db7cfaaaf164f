// models::GPT and the fused attention it runs on: config parsing and its errors, parameter names and count,
// the tied output layer, causality, fused vs unfused attention (values and gradients), a float64 gradcheck of
// a tiny model, and sampling.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <optional>

#include "syncgrad.h"
#include "tests/check_error.h"

using namespace syncgrad;
using syncgrad::testing::check_error;

namespace {

models::GPTConfig tiny_config() {
  return models::GPTConfig::parse("vocab_size=11,block_size=6,n_layer=2,n_head=2,n_embd=8");
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = to_vector<double>(a), y = to_vector<double>(b);
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double diff = std::abs(x[i] - y[i]);
    if (std::isnan(diff)) return std::numeric_limits<double>::infinity();  // std::max would drop a NaN
    worst = std::max(worst, diff);
  }
  return worst;
}

// softmax(q k^T * scale + causal mask) v from separate ops: the reference for the fused kernel.
Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                           std::optional<double> scale = std::nullopt) {
  const int64_t len = q.size(-2), keys = k.size(-2);
  const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), factor);
  if (causal) {
    Tensor visible = ge(raw::view(arange(len), {len, 1}), raw::view(arange(keys), {1, keys}));
    scores = where(visible, scores, -std::numeric_limits<double>::infinity());
  }
  return matmul(softmax(scores, -1), v);
}

Tensor tokens_of(const std::vector<int64_t>& ids) {
  return from_vector(ids, {1, static_cast<int64_t>(ids.size())});
}

}  // namespace

TEST_CASE("GPTConfig: defaults, key=value pairs, and errors naming the key and the allowed keys") {
  models::GPTConfig d = models::GPTConfig::parse("");
  CHECK(d.vocab_size == 256);
  CHECK(d.n_layer == 4);
  CHECK(d.head_size() == 32);
  models::GPTConfig c =
      models::GPTConfig::parse(" n_layer=2, n_embd=64 ,n_head=8,dropout=0.1,bias=false,block_size=32");
  CHECK(c.n_layer == 2);
  CHECK(c.n_embd == 64);
  CHECK(c.head_size() == 8);
  CHECK(c.dropout == doctest::Approx(0.1));
  CHECK_FALSE(c.bias);
  CHECK(models::GPTConfig::parse(c.to_string()).to_string() == c.to_string());
  check_error<ValueError>([] { models::GPTConfig::parse("n_layers=2"); },
                          {"unknown key \"n_layers\"", "allowed keys: vocab_size, block_size, n_layer"});
  check_error<ValueError>([] { models::GPTConfig::parse("n_layer=two"); }, {"n_layer=\"two\"", "integer"});
  check_error<ValueError>([] { models::GPTConfig::parse("n_layer"); }, {"\"n_layer\" is not key=value"});
  check_error<ValueError>([] { models::GPTConfig::parse("bias=maybe"); }, {"bias", "boolean"});
  check_error<ValueError>([] { models::GPTConfig::parse("n_embd=100,n_head=3"); },
                          {"n_embd=100", "not a multiple of n_head=3"});
  check_error<ValueError>([] { models::GPTConfig::parse("n_layer=0"); }, {"n_layer=0", ">= 1"});
  check_error<ValueError>([] { models::GPTConfig::parse("dropout=1"); }, {"dropout", "[0, 1)"});
}

TEST_CASE("GPT: GPT-2 parameter names, count and the tied output layer") {
  Generator gen(0);
  models::GPT model(tiny_config(), &gen);
  const int64_t d = 8, layers = 2, vocab = 11, block = 6;
  const int64_t expected = layers * (12 * d * d + 13 * d) + vocab * d + block * d + 2 * d;
  CHECK(model.num_parameters() == expected);
  CHECK(model.num_parameters(true) == expected - block * d);
  CHECK(model.flops_per_token() == doctest::Approx(6.0 * (expected - block * d) + 12.0 * layers * d * block));
  std::vector<std::string> names;
  for (const auto& [name, t] : model.state_dict()) names.push_back(name);
  const std::vector<std::string> first = {"transformer.wte.weight", "transformer.wpe.weight",
                                          "transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias",
                                          "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
                                          "transformer.h.0.attn.c_proj.weight", "transformer.h.0.attn.c_proj.bias",
                                          "transformer.h.0.ln_2.weight", "transformer.h.0.ln_2.bias",
                                          "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_fc.bias",
                                          "transformer.h.0.mlp.c_proj.weight", "transformer.h.0.mlp.c_proj.bias"};
  REQUIRE(names.size() == 2 + 12 * 2 + 2 + 1);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 14) == first);
  CHECK(names[names.size() - 3] == "transformer.ln_f.weight");
  CHECK(names.back() == "lm_head.weight");
  CHECK(model.lm_head->weight.is_same(model.transformer->wte->weight));
  CHECK(model.parameters().size() == names.size() - 1);  // the tied weight is one parameter

  // GPT-2 initialisation: N(0, 0.02) weights, residual projections scaled by 1 / sqrt(2 n_layer), zero biases.
  models::GPT big(models::GPTConfig::parse("n_layer=2,n_embd=256,n_head=4"), &gen);
  auto stddev = [](const Tensor& t) {
    const std::vector<double> v = to_vector<double>(t);
    double sum = 0, sq = 0;
    for (double x : v) sum += x, sq += x * x;
    const double mean = sum / static_cast<double>(v.size());
    return std::sqrt(sq / static_cast<double>(v.size()) - mean * mean);
  };
  CHECK(stddev(big.transformer->wte->weight) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(stddev(big.transformer->blocks[0]->attn->c_attn->weight) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(stddev(big.transformer->blocks[1]->mlp->c_proj->weight) == doctest::Approx(0.01).epsilon(0.05));
  CHECK(max_abs_diff(big.transformer->blocks[0]->mlp->c_fc->bias, zeros({1024})) == 0);

  models::GPT no_bias(models::GPTConfig::parse("vocab_size=11,block_size=6,n_layer=1,n_head=2,n_embd=8,bias=false"));
  CHECK_FALSE(no_bias.transformer->ln_f->bias.defined());
  CHECK_FALSE(no_bias.transformer->blocks[0]->attn->c_attn->bias.defined());
}

TEST_CASE("GPT forward: logits shape, and the errors for bad token tensors") {
  Generator gen(1);
  models::GPT model(tiny_config(), &gen);
  Tensor logits = model.forward(from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}));
  CHECK(logits.sizes() == Shape{2, 4, 11});
  check_error<ShapeError>([&] { model.forward(tokens_of({1, 2, 3, 4, 5, 6, 7})); },
                          {"block_size = 6", "[1, 7]", "crop"});
  check_error<ShapeError>([&] { model.forward(tensor({1.f, 2.f})); }, {"int64"});
  check_error<IndexError>([&] { model.forward(tokens_of({1, 11})); }, {"11"});
}

TEST_CASE("GPT is causal: changing tokens after position t leaves the logits up to t unchanged") {
  Generator gen(2);
  models::GPT model(tiny_config(), &gen);
  Tensor a = model.forward(tokens_of({3, 1, 4, 1, 5, 9}));
  Tensor b = model.forward(tokens_of({3, 1, 4, 2, 7, 0}));
  CHECK(max_abs_diff(raw::narrow(a, 1, 0, 3), raw::narrow(b, 1, 0, 3)) == 0);
  CHECK(max_abs_diff(raw::narrow(a, 1, 3, 1), raw::narrow(b, 1, 3, 1)) > 1e-6);
}

TEST_CASE("fused attention equals the unfused composition in values and gradients (f32 and f64)") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (bool causal : {true, false}) {
      INFO(dtype_name(dtype) << " causal " << causal);
      Generator gen(3);
      // 70 queries: more than two blocks of the kernel's 32 rows; heads as strided views of one tensor.
      Tensor qkv = randn({2, 70, 3 * 3 * 16}, {.dtype = dtype}, &gen);
      auto part = [&](const Tensor& t, int64_t i) {
        return transpose(view(narrow(t, 2, i * 48, 48), {2, 70, 3, 16}), 1, 2);
      };
      Tensor upstream = randn({2, 3, 70, 16}, {.dtype = dtype}, &gen);
      Tensor fused_in = raw::clone(qkv).requires_grad_(true), plain_in = raw::clone(qkv).requires_grad_(true);
      Tensor fused = scaled_dot_product_attention(part(fused_in, 0), part(fused_in, 1), part(fused_in, 2), causal);
      Tensor plain = reference_attention(part(plain_in, 0), part(plain_in, 1), part(plain_in, 2), causal);
      const double tolerance = dtype == DType::f32 ? 2e-5 : 1e-12;
      CHECK(max_abs_diff(fused, plain) < tolerance);
      sum(mul(fused, upstream)).backward();
      sum(mul(plain, upstream)).backward();
      CHECK(max_abs_diff(fused_in.grad(), plain_in.grad()) < 10 * tolerance);
    }
  }
}

TEST_CASE("fused attention with more queries than keys and separate q, k, v (f32 tiles and f64)") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (bool causal : {true, false}) {
      INFO(dtype_name(dtype) << " causal " << causal);
      Generator gen(8);
      Tensor q = randn({2, 3, 40, 16}, {.dtype = dtype}, &gen).requires_grad_(true);
      Tensor k = randn({2, 3, 24, 16}, {.dtype = dtype}, &gen).requires_grad_(true);
      Tensor v = randn({2, 3, 24, 32}, {.dtype = dtype}, &gen).requires_grad_(true);
      Tensor upstream = randn({2, 3, 40, 32}, {.dtype = dtype}, &gen);
      std::vector<Tensor> fused_grads, plain_grads;
      for (bool fused : {true, false}) {
        Tensor out = fused ? scaled_dot_product_attention(q, k, v, causal) : reference_attention(q, k, v, causal);
        std::vector<Tensor> grads = autograd::grad({sum(mul(out, upstream))}, {q, k, v});
        grads.push_back(out);
        (fused ? fused_grads : plain_grads) = grads;
      }
      const double tolerance = dtype == DType::f32 ? 1e-4 : 1e-12;
      for (size_t i = 0; i < 4; ++i) CHECK(max_abs_diff(fused_grads[i], plain_grads[i]) < tolerance);
    }
  }
}

TEST_CASE("fused float32 attention with fewer queries than keys: keys no query sees get zero gradients") {
  // 40 keys, causal queries 0..20 see keys 0..20 only: the kernel writes the gradients of keys the blocks reach
  // and zero-fills the rest (its buffers start uninitialised: here they start as NaN); with 70 queries against
  // 75 keys, blocks of 32 rows reach keys 32, 64 and 70 in turn, each block adding to the keys before and
  // writing the new ones.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (auto [queries, keys] : {std::pair<int64_t, int64_t>{21, 40}, {70, 75}}) {
    for (bool causal : {true, false}) {
      INFO(queries << " queries, " << keys << " keys, causal " << causal);
      Generator gen(12);
      Tensor q = randn({2, 2, queries, 16}, {}, &gen), k = randn({2, 2, keys, 16}, {}, &gen);
      Tensor v = randn({2, 2, keys, 32}, {}, &gen), upstream = randn({2, 2, queries, 32}, {}, &gen);
      Tensor qg = raw::clone(q).requires_grad_(true), kg = raw::clone(k).requires_grad_(true);
      Tensor vg = raw::clone(v).requires_grad_(true);
      std::vector<Tensor> expected = autograd::grad({sum(mul(reference_attention(qg, kg, vg, causal), upstream))},
                                                    {qg, kg, vg});
      const raw::AttentionResult forward = raw::scaled_dot_product_attention(q, k, v, causal);
      std::vector<Tensor> grads = {full(q.sizes(), nan), full(k.sizes(), nan), full(v.sizes(), nan)};
      kernels::attention_backward(q.device(), grads[0], grads[1], grads[2], upstream, q, k, v, forward.out,
                                  forward.lse, causal, 0.25);
      for (size_t i = 0; i < 3; ++i) CHECK(max_abs_diff(grads[i], expected[i]) < 1e-4);
      if (causal && keys > queries) {
        for (size_t i : {1, 2}) {
          Tensor unseen = raw::narrow(grads[i], 2, queries, keys - queries);
          CHECK(max_abs_diff(unseen, zeros(unseen.sizes())) == 0);
        }
      }
    }
  }
}

TEST_CASE("fused float32 attention with an explicit scale, negative too, equals the composition") {
  // Head size 32 (the register-tile path); 45 positions: rows whose visible keys end inside a vector. Scaled
  // scores spread over ~100: shifted by the wrong extreme (the largest unscaled score under a negative scale),
  // exp overflows.
  Generator gen(9);
  Tensor q = mul(randn({2, 2, 45, 32}, {}, &gen), 10.0);
  Tensor k = randn({2, 2, 45, 32}, {}, &gen), v = randn({2, 2, 45, 32}, {}, &gen);
  Tensor upstream = randn({2, 2, 45, 32}, {}, &gen);
  for (double scale : {0.3, -0.45}) {
    for (bool causal : {true, false}) {
      INFO("scale " << scale << " causal " << causal);
      std::vector<Tensor> results[2];
      for (bool fused : {true, false}) {
        Tensor qg = raw::clone(q).requires_grad_(true), kg = raw::clone(k).requires_grad_(true);
        Tensor vg = raw::clone(v).requires_grad_(true);
        Tensor out = fused ? scaled_dot_product_attention(qg, kg, vg, causal, scale)
                           : reference_attention(qg, kg, vg, causal, scale);
        results[fused] = autograd::grad({sum(mul(out, upstream))}, {qg, kg, vg});
        results[fused].push_back(out);
      }
      for (size_t i = 0; i < 4; ++i) CHECK(max_abs_diff(results[0][i], results[1][i]) < 1e-4);
    }
  }
}

TEST_CASE("the fused attention lays its output out (B, L, H, E) and checks its operands") {
  Tensor q = randn({2, 3, 5, 4}), k = randn({2, 3, 7, 4}), v = randn({2, 3, 7, 6});
  Tensor out = scaled_dot_product_attention(q, k, v);
  CHECK(out.sizes() == Shape{2, 3, 5, 6});
  CHECK(raw::transpose(out, 1, 2).is_contiguous());
  check_error<ShapeError>([&] { scaled_dot_product_attention(q, randn({2, 3, 7, 5}), v); }, {"same last dim E"});
  check_error<ShapeError>([&] { scaled_dot_product_attention(q, k, randn({2, 3, 6, 6})); }, {"key count S"});
  check_error<ShapeError>([&] { scaled_dot_product_attention(q, randn({2, 2, 7, 4}), v); }, {"batch, head"});
  check_error<ShapeError>([&] { scaled_dot_product_attention(randn({5, 4}), k, v); }, {"expected q (B, H, L, E)"});
  check_error<DTypeError>([&] { scaled_dot_product_attention(q, raw::to(k, DType::f64), v); }, {"one floating dtype"});
  // bfloat16 runs in float32 and comes back in bfloat16.
  Tensor half_out =
      scaled_dot_product_attention(raw::to(q, DType::bf16), raw::to(k, DType::bf16), raw::to(v, DType::bf16));
  CHECK(half_out.dtype() == DType::bf16);
  CHECK(max_abs_diff(raw::to(half_out, DType::f32), out) < 0.05);
}

TEST_CASE("GPT with the fused attention equals GPT with the unfused composition") {
  Generator gen(4);
  models::GPT model(tiny_config(), &gen);
  Tensor tokens = from_vector(std::vector<int64_t>{1, 5, 2, 7, 3, 0, 9, 4, 4, 8, 6, 1}, {2, 6});
  Tensor fused = model.forward(tokens);
  for (const auto& block : model.transformer->blocks) block->attn->fused = false;
  Tensor plain = model.forward(tokens);
  CHECK(max_abs_diff(fused, plain) < 1e-5);
}

TEST_CASE("GPT with the fused linear + GELU equals GPT with c_fc and GELU as two ops, gradients too") {
  Generator gen(4);
  models::GPT model(tiny_config(), &gen);
  Tensor tokens = from_vector(std::vector<int64_t>{1, 5, 2, 7, 3, 0, 9, 4, 4, 8, 6, 1}, {2, 6});
  auto loss_and_grads = [&] {
    model.zero_grad();
    Tensor loss = sum(square(model.forward(tokens)));
    loss.backward();
    std::vector<Tensor> grads;
    for (const Tensor& p : model.parameters()) grads.push_back(raw::clone(p.grad()));
    return std::pair{loss, grads};
  };
  const auto [fused_loss, fused_grads] = loss_and_grads();
  for (const auto& block : model.transformer->blocks) block->mlp->fused = false;
  const auto [plain_loss, plain_grads] = loss_and_grads();
  CHECK(max_abs_diff(fused_loss, plain_loss) < 1e-4 * std::abs(plain_loss.item<double>()));
  for (size_t i = 0; i < plain_grads.size(); ++i) CHECK(max_abs_diff(fused_grads[i], plain_grads[i]) < 1e-4);
}

TEST_CASE("gradcheck in float64 of a tiny GPT with respect to every parameter") {
  Generator gen(5);
  models::GPT model(models::GPTConfig::parse("vocab_size=7,block_size=5,n_layer=1,n_head=2,n_embd=4"), &gen);
  model.to(DType::f64);
  Tensor tokens = from_vector(std::vector<int64_t>{1, 6, 0, 3, 2, 5, 5, 4}, {2, 4});
  autograd::GradcheckResult result = autograd::gradcheck(
      "tiny GPT", [&](const std::vector<Tensor>&) { return model.forward(tokens); }, model.parameters());
  CHECK_MESSAGE(result.ok, result.message);
}

TEST_CASE("generate: the requested length, reproducible per seed, top_k 1 is greedy, errors") {
  Generator gen(6);
  models::GPT model(tiny_config(), &gen);
  const std::vector<int64_t> prompt = {1, 2, 3};
  std::vector<int64_t> a = models::generate(model, prompt, 10, {.seed = 7});
  CHECK(a.size() == 10);
  for (int64_t t : a) CHECK((t >= 0 && t < 11));
  CHECK(models::generate(model, prompt, 10, {.seed = 7}) == a);
  CHECK(model.is_training());  // the mode is restored
  // top_k = 1: always the most likely next token.
  std::vector<int64_t> greedy = models::generate(model, prompt, 3, {.temperature = 0.5, .top_k = 1, .seed = 1});
  std::vector<int64_t> context = prompt;
  model.eval();
  for (int64_t next : greedy) {
    NoGradGuard no_grad;
    Tensor logits = model.forward(tokens_of(context));
    const int64_t len = static_cast<int64_t>(context.size());
    CHECK(next == raw::argmax(raw::select(raw::select(logits, 0, 0), 0, len - 1), 0).item<int64_t>());
    context.push_back(next);
  }
  model.train();
  // Longer than block_size: the context is cropped to the last block_size tokens.
  CHECK(models::generate(model, prompt, 12, {.seed = 2}).size() == 12);
  check_error<ValueError>([&] { models::generate(model, prompt, 5, {.temperature = 0}); }, {"temperature", "positive"});
  check_error<ValueError>([&] { models::generate(model, {}, 5); }, {"prompt", "at least one token"});
  check_error<ValueError>([&] { models::generate(model, prompt, 5, {.top_k = -1}); }, {"top_k"});
  check_error<ValueError>([&] { models::generate(model, prompt, -1); }, {"max_new_tokens"});
}
