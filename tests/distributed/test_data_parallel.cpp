// DataParallel (one process, replicas on worker threads): training with 2 and 3 workers equals training the
// model itself on the whole batch; BatchNorm's running statistics come from replica 0; bad replicas are refused.
#include <doctest/doctest.h>

#include "autograd/grad_mode.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/views.h"
#include "distributed/data_parallel.h"
#include "models/models.h"
#include "nn/linear.h"
#include "optim/sgd.h"
#include "tensor/ops/factories.h"
#include "tests/check_error.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

namespace {

double max_relative_difference(const nn::Module& a, const nn::Module& b) {
  double worst = 0;
  auto pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const double diff = max(abs(sub(pa[i].second, pb[i].second))).item<double>();
    worst = std::max(worst, diff / (max(abs(pb[i].second)).item<double>() + 1e-12));
  }
  return worst;
}

}  // namespace

TEST_CASE("DataParallel with 2 and 3 workers trains like the model on the whole batch (MLP, CNN)") {
  for (const std::string name : {"mlp", "cnn"}) {
    for (int workers : {2, 3}) {
      INFO(name << " with " << workers << " workers");
      Generator a(9), b(9);
      auto model = models::make_model(name, &a);
      auto reference = models::make_model(name, &b);
      DataParallel dp(model, [&] { return models::make_model(name); }, {.num_workers = workers});
      optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
      optim::SGD ref_opt(reference->parameters(), {.lr = 0.05, .momentum = 0.9});
      for (int step = 0; step < (name == "mlp" ? 4 : 2); ++step) {
        Generator gen(step);
        Tensor x = randn(name == "cnn" ? Shape{16, 1, 28, 28} : Shape{16, 784}, {}, &gen);
        Tensor y = randint(0, 10, {16}, {.dtype = DType::i64}, &gen);
        opt.zero_grad();
        cross_entropy(dp(x), y).backward();
        opt.step();
        ref_opt.zero_grad();
        cross_entropy((*reference)(x), y).backward();
        ref_opt.step();
      }
      CHECK(max_relative_difference(*model, *reference) < 1e-5);
    }
  }
}

TEST_CASE("DataParallel: evaluation without grad, fewer samples than workers, and bad replicas") {
  Generator gen(1);
  auto model = models::make_model("mlp", &gen);
  DataParallel dp(model, [] { return models::make_model("mlp"); }, {.num_workers = 4});
  {
    NoGradGuard no_grad;
    Tensor out = dp(randn({2, 784}, {}, &gen));  // 2 samples: only 2 replicas run
    CHECK(out.sizes() == Shape{2, 10});
    CHECK_FALSE(out.requires_grad());
  }
  testing::check_error<ValueError>([&] {
    DataParallel bad(model, [] { return models::make_model("cnn"); });
  }, {"make_replica builds a different model", "parameters #0 is fc1.weight"});
  testing::check_error<ValueError>([&] {
    DataParallel none(model, [] { return models::make_model("mlp"); }, {.num_workers = 0});
  }, {"num_workers must be >= 1, got 0"});
  testing::check_error<ShapeError>([&] { dp(zeros({0, 784})); }, {"non-empty batch dimension"});
  Tensor loss = sum(dp(randn({4, 784}, {}, &gen)));
  loss.backward(Tensor(), /*retain_graph=*/true);
  testing::check_error<AutogradError>([&] { loss.backward(); }, {"backward ran twice through the same forward"});
}
