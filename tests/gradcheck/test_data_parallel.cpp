// gradcheck of DataParallel's gather node: gradients of the model's parameters through 2 replicas (each replica
// runs its part of the batch; the node sums the replicas' parameter gradients).
#include "autograd/ops/linalg.h"
#include "distributed/data_parallel.h"
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

namespace {

// y = x W^T + b with W and b given (registered as they are, so gradcheck's inputs are the parameters).
class Affine : public nn::Module {
 public:
  Affine(Tensor weight, Tensor bias) : nn::Module("Affine") {
    register_parameter("weight", std::move(weight));
    register_parameter("bias", std::move(bias));
  }
  Tensor forward(const Tensor& x) override {
    auto params = parameters();
    return linear(x, params[0], params[1]);
  }
};

}  // namespace

TEST_CASE("gradcheck: DataParallel with 2 replicas, batch split 3 + 2") {
  Tensor x = leaf({5, 3}, 31).detach();
  CHECK_GRADCHECK("data_parallel", [&](const std::vector<Tensor>& in) {
    auto model = std::make_shared<Affine>(in[0], in[1]);
    distributed::DataParallel dp(model, [] {
      return std::make_shared<Affine>(zeros({2, 3}, {.dtype = DType::f64}), zeros({2}, {.dtype = DType::f64}));
    }, {.num_workers = 2});
    return dp(x);
  }, {leaf({2, 3}, 32), leaf({2}, 33)});
}
