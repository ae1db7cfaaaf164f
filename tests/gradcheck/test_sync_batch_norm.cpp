// gradcheck of sync_batch_norm on a one-rank process group (the cross-rank sums are then the local ones, so
// its backward must equal batch_norm's; the two-rank equivalence is in tests/distributed/test_ddp.cpp).
#include "distributed/hash_store.h"
#include "distributed/sync_batch_norm.h"
#include "tests/gradcheck/check.h"

using namespace syncgrad;
using syncgrad::testing::leaf;

TEST_CASE("gradcheck: sync_batch_norm on one rank, with and without affine") {
  auto group = distributed::make_process_group("gloo", std::make_shared<distributed::HashStore>(), 0, 1, {});
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 2, 2}}) {
    INFO(shape_str(shape));
    Tensor x = leaf(shape, 21), w = leaf({3}, 22), b = leaf({3}, 23);
    CHECK_GRADCHECK("sync_batch_norm affine " + shape_str(shape), [&](const std::vector<Tensor>& in) {
      return distributed::sync_batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], 0.1, 1e-5, group);
    }, {x, w, b});
  }
  CHECK_GRADCHECK("sync_batch_norm", [&](const std::vector<Tensor>& in) {
    return distributed::sync_batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-3, group);
  }, {leaf({5, 2, 3}, 24)});
}
