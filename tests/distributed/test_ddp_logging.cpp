// DistributedDataParallel::logging_data() on 2 real ranks: the set-up (world, backend, hook, the bucket plan in
// bytes and parameters), the rebuild after the first step, averages over the steps run (forward, backward
// compute, communication, exposed communication, overlap in [0, 1]), and the unused parameters a rank found.
#include <doctest/doctest.h>

#include <numeric>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "distributed/ddp.h"
#include "models/models.h"
#include "nn/linear.h"
#include "tensor/ops/factories.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::expect_all_ok;
using syncgrad::test::run_job;

namespace {

// fc1 -> (spare, when used) -> fc2.
class SpareNet : public nn::Module {
 public:
  explicit SpareNet(bool use_spare) : nn::Module("SpareNet"), use_spare_(use_spare) {
    Generator gen(3);
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(8, 16, true, &gen));
    spare = register_module("spare", std::make_shared<nn::Linear>(16, 16, true, &gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 4, true, &gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu((*fc1)(x));
    if (use_spare_) h = (*spare)(h);
    return (*fc2)(h);
  }
  std::shared_ptr<nn::Linear> fc1, spare, fc2;
  bool use_spare_;
};

}  // namespace

TEST_CASE("logging_data: the bucket plan, the rebuild, and averages of the last steps on 2 ranks") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    Generator gen(1);
    auto model = models::make_model("mlp", &gen);
    DistributedDataParallel ddp(model, {.bucket_cap_mb = 0.2, .first_bucket_mb = 0.001});
    DDPLoggingData before = ddp.logging_data();
    expect(before.world_size == 2 && before.rank == rank, "world 2, this rank");
    expect(before.backend == "gloo", "backend gloo, got " + before.backend);
    expect(before.module_name == "MLP", "module MLP, got " + before.module_name);
    expect(before.comm_hook == "allreduce", "the default hook, got " + before.comm_hook);
    expect(before.num_parameter_tensors == 6, "6 parameter tensors");
    expect(before.bucket_sizes_bytes.size() >= 3, "several buckets for a 0.2 MB cap");
    expect(before.bucket_sizes_bytes.size() == before.bucket_parameter_counts.size(), "sizes and counts per bucket");
    const size_t bytes = std::accumulate(before.bucket_sizes_bytes.begin(), before.bucket_sizes_bytes.end(), size_t{0});
    expect(static_cast<int64_t>(bytes) == before.total_parameter_bytes, "the buckets hold every gradient byte once");
    expect(std::accumulate(before.bucket_parameter_counts.begin(), before.bucket_parameter_counts.end(), size_t{0}) ==
               6,
           "the buckets hold every parameter once");
    expect(!before.buckets_rebuilt && before.iterations == 0 && before.averaged_steps == 0, "no step yet");
    expect(before.avg_comm_seconds == 0 && before.comm_overlap_ratio == 0, "no averages yet");

    for (int step = 0; step < 3; ++step) {
      Tensor x = randn({8, 784}, {}, &gen);
      sum(ddp(x)).backward();
    }
    DDPLoggingData after = ddp.logging_data();
    expect(after.iterations == 3 && after.averaged_steps == 3 && after.averaged_forwards == 3, "3 steps averaged");
    expect(after.buckets_rebuilt, "2 ranks and several buckets: rebuilt in gradient-ready order");
    expect(after.avg_forward_seconds > 0 && after.avg_backward_compute_seconds > 0, "forward and backward timed");
    expect(after.avg_comm_seconds > 0 && after.avg_exposed_comm_seconds > 0, "communication timed");
    expect(after.comm_overlap_ratio >= 0 && after.comm_overlap_ratio <= 1, "overlap ratio in [0, 1]");
    expect(after.unused_parameters.empty(), "the MLP uses every parameter");
    const std::string text = to_string(after);
    expect(text.find("bucket_sizes_bytes: [") != std::string::npos, "the text lists the bucket sizes");
    expect(text.find("iterations: 3\n") != std::string::npos, "the text gives the iterations");
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("logging_data: with find_unused_parameters, each rank names the parameters it did not use") {
  auto outcomes = run_job(2, [](int rank) {
    init_process_group(syncgrad::test::quick_init());
    auto model = std::make_shared<SpareNet>(rank == 1);
    DistributedDataParallel ddp(model, {.find_unused_parameters = true});
    sum(ddp(ones({2, 8}))).backward();
    const DDPLoggingData data = ddp.logging_data();
    expect(data.find_unused_parameters, "the option is reported");
    if (rank == 0) {
      expect(data.unused_parameters == std::vector<std::string>{"spare.weight", "spare.bias"},
             "rank 0 did not use spare: " + to_string(data));
    } else {
      expect(data.unused_parameters.empty(), "rank 1 used every parameter: " + to_string(data));
    }
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}
