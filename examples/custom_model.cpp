// custom-model-example: how to write, train and save your own model with syncgrad's C++ API.
//
// It defines a small residual MLP (ResMLP: a Linear stem, two pre-norm residual blocks with LayerNorm and
// Dropout, and a Linear head), trains it on Fashion-MNIST with AdamW for one epoch (or --max-steps N), prints
// the loss and the test accuracy, and saves the weights as safetensors (loadable with
// `safetensors.torch.load_file` in Python).
//
// Usage: custom-model-example [--max-steps N] [--data-dir DIR] [--out FILE]
// Build: in-tree as build/examples/custom-model-example; against an installed syncgrad with
//        g++ -std=c++20 custom_model.cpp $(pkg-config --cflags --libs syncgrad)  (see examples/standalone/).
#include <cstdio>
#include <memory>
#include <string>

#include "syncgrad.h"  // the umbrella header: tensors, autograd, nn, optim, data, io

using namespace syncgrad;

// ---- 1. A building block: y = x + fc2(dropout(relu(fc1(norm(x))))) -------------------------------------------
// A module derives from nn::Module, passes its type name (used in printing and errors) to the base, and
// registers every child with register_module(name, ...). The names become the state-dict keys
// ("blocks.0.fc1.weight", ...), so parameters are found by optimizers and saved without any extra code.
class ResidualBlock : public nn::Module {
 public:
  ResidualBlock(int64_t width, int64_t hidden, double dropout_p)
      : Module("ResidualBlock"),
        norm(register_module("norm", std::make_shared<nn::LayerNorm>(Shape{width}))),
        fc1(register_module("fc1", std::make_shared<nn::Linear>(width, hidden))),
        fc2(register_module("fc2", std::make_shared<nn::Linear>(hidden, width))),
        drop(register_module("drop", std::make_shared<nn::Dropout>(dropout_p))) {}

  // forward() uses the differentiable ops (relu, +): autograd records them, so backward() needs no code here.
  // Dropout follows the module's train()/eval() mode, which the parent propagates to its children.
  Tensor forward(const Tensor& x) override {
    Tensor h = fc2->forward(drop->forward(relu(fc1->forward(norm->forward(x)))));
    return x + h;  // the skip connection: gradients flow through both branches
  }

  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
};

// ---- 2. The model: stem -> blocks -> norm -> head ------------------------------------------------------------
// Children can be containers too: ModuleList registers its entries as "0", "1", ...
class ResMLP : public nn::Module {
 public:
  ResMLP(int64_t width = 128, int64_t depth = 2, double dropout_p = 0.1)
      : Module("ResMLP"),
        stem(register_module("stem", std::make_shared<nn::Linear>(28 * 28, width))),
        blocks(register_module("blocks", std::make_shared<nn::ModuleList>())),
        norm(register_module("norm", std::make_shared<nn::LayerNorm>(Shape{width}))),
        head(register_module("head", std::make_shared<nn::Linear>(width, 10))) {
    for (int64_t i = 0; i < depth; ++i) blocks->push_back(std::make_shared<ResidualBlock>(width, 2 * width, dropout_p));
  }

  // (N, 1, 28, 28) images -> (N, 10) logits
  Tensor forward(const Tensor& images) override {
    Tensor x = stem->forward(flatten(images, 1));
    for (const auto& block : *blocks) x = block->forward(x);
    return head->forward(relu(norm->forward(x)));
  }

  std::shared_ptr<nn::Linear> stem;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Linear> head;
};

// ---- 3. Evaluation: no autograd history, eval mode (dropout off), batches of 1000 ---------------------------
double accuracy(nn::Module& model, const data::MnistSplit& split) {
  NoGradGuard no_grad;
  model.eval();
  int64_t n = split.labels.numel(), correct = 0;
  for (int64_t begin = 0; begin < n; begin += 1000) {
    int64_t len = std::min<int64_t>(1000, n - begin);
    Tensor predicted = argmax(model(raw::narrow(split.images, 0, begin, len)), 1);
    correct += raw::sum(eq(predicted, raw::narrow(split.labels, 0, begin, len))).item<int64_t>();
  }
  model.train();
  return static_cast<double>(correct) / static_cast<double>(n);
}

int main(int argc, char** argv) try {
  int64_t max_steps = 0;  // 0: one full epoch
  std::string data_dir = data::default_fashion_mnist_dir(), out = "custom_model.safetensors";
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 == argc) throw ValueError(flag + " needs a value (flags: --max-steps N, --data-dir DIR, --out FILE)");
    std::string value = argv[++i];
    if (flag == "--max-steps") max_steps = std::stoll(value);
    else if (flag == "--data-dir") data_dir = value;
    else if (flag == "--out") out = value;
    else throw ValueError("unknown argument " + flag);
  }

  // ---- 4. Data: normalised f32 images (N, 1, 28, 28) and i64 labels (N) ----
  data::MnistSplit train_set = data::load_fashion_mnist(data_dir, /*train=*/true);
  data::MnistSplit test_set = data::load_fashion_mnist(data_dir, /*train=*/false);

  // ---- 5. Model and optimizer: manual_seed fixes the initialisation, dropout masks and shuffling ----
  manual_seed(0);
  ResMLP model;
  std::printf("%s\n", model.to_string().c_str());
  optim::AdamW optimizer(model.parameters(), {.lr = 1e-3, .weight_decay = 1e-2});

  // ---- 6. One epoch: a random permutation, cut into batches gathered with raw::index_select ----
  const int64_t n = train_set.labels.numel(), batch = 64;
  Tensor order = randperm(n);
  int64_t step = 0;
  for (int64_t begin = 0; begin < n && (max_steps == 0 || step < max_steps); begin += batch, ++step) {
    Tensor index = raw::narrow(order, 0, begin, std::min(batch, n - begin));
    Tensor images = raw::index_select(train_set.images, 0, index);
    Tensor labels = raw::index_select(train_set.labels, 0, index);

    Tensor loss = cross_entropy(model(images), labels);  // forward: records the graph
    optimizer.zero_grad();                                // drop last step's gradients
    loss.backward();                                      // fills p.grad() for every parameter
    optimizer.step();                                     // updates the parameters in place
    if (step % 100 == 0) std::printf("step %5lld  loss %.4f\n", static_cast<long long>(step), loss.item<double>());
  }
  std::printf("trained %lld steps; test accuracy %.4f\n", static_cast<long long>(step), accuracy(model, test_set));

  // ---- 7. Checkpoint: state_dict() gives PyTorch-style keys; the file is written atomically ----
  io::save_safetensors(out, model.state_dict());
  std::printf("saved %zu tensors to %s\n", model.state_dict().size(), out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "custom-model-example: %s\n", e.what());
  return 1;
}
