// gradcheck itself must be able to fail: a node with a deliberately wrong backward is caught.
#include "autograd/meta.h"
#include "tests/gradcheck/check.h"

using namespace syncgrad;

namespace {

// d(2x)/dx is 2; this backward claims 3. Not registered as a library op (it lives in the test).
struct WrongDoubleBackward final : autograd::Node {
  const char* name() const override { return "WrongDoubleBackward"; }
  autograd::GradList apply(autograd::GradList&& g) override { return {raw::mul(g[0], 3.0)}; }
};

Tensor wrong_double(const Tensor& x) {
  Tensor out = raw::mul(x, 2.0);
  if (autograd::any_requires_grad({&x})) autograd::record(std::make_shared<WrongDoubleBackward>(), {&x}, {&out});
  return out;
}

}  // namespace

TEST_CASE("gradcheck detects a wrong backward and says where") {
  Tensor x = syncgrad::testing::leaf({3});
  auto result = autograd::gradcheck("wrong_double", [](const std::vector<Tensor>& in) { return wrong_double(in[0]); },
                                    {x});
  CHECK_FALSE(result.ok);
  CHECK(result.message.find("wrong_double") != std::string::npos);
  CHECK(result.message.find("analytical") != std::string::npos);
}

TEST_CASE("gradcheck rejects an op that records no history") {
  Tensor x = syncgrad::testing::leaf({3});
  auto result = autograd::gradcheck("raw", [](const std::vector<Tensor>& in) { return raw::mul(in[0], 2.0); }, {x});
  CHECK_FALSE(result.ok);
}
