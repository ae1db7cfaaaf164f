// Process groups over Gloo: every collective and dtype between real processes on 127.0.0.1, world size 1
// without a network, init_process_group's errors, and failures (dead or stuck peer) that end in an error
// naming the rank and the collective instead of a hang.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "distributed/errors.h"
#include "distributed/init.h"
#include "tensor/generator.h"
#include "tensor/ops/factories.h"
#include "tests/check_error.h"
#include "tests/distributed/multiprocess.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::test::expect;
using syncgrad::test::report;
using syncgrad::test::expect_all_ok;
using syncgrad::test::run_job;
using syncgrad::testing::check_error;

namespace {

// (n) tensor of dtype whose element i is (rank + 1) * (i + 1).
Tensor ramp(int64_t n, int rank, DType dtype) {
  Tensor t = arange(1, n + 1, 1, TensorOptions{DType::f64});
  return mul(t, Scalar(double(rank + 1))).to(dtype);
}

}  // namespace

TEST_CASE("world size 1 needs no network and every collective is the identity") {
  InitOptions options;
  options.rank = 0;
  options.world_size = 1;
  auto group = init_process_group(options);
  CHECK(is_initialized());
  CHECK(get_world_size() == 1);
  Tensor t = ramp(5, 0, DType::f32);
  group->allreduce(t, ReduceOp::kAvg)->wait();
  CHECK(t.to(DType::f64).sum().item<double>() == doctest::Approx(15));
  group->broadcast(t, 0)->wait();
  Tensor out = zeros({5});
  group->allgather({out}, t)->wait();
  CHECK(out.sum().item<double>() == doctest::Approx(15));
  group->barrier()->wait();
  destroy_process_group();
  CHECK_FALSE(is_initialized());
}

TEST_CASE("allreduce: sum, avg, max, min for every dtype between 3 processes") {
  auto outcomes = run_job(3, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init());
    for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
        if (op == ReduceOp::kAvg && !is_floating(dtype)) continue;
        Tensor t = ramp(1000, rank, dtype);
        group->allreduce(t, op)->wait();
        // Expected factor over (i + 1): sum 1+2+3, avg 2, max 3, min 1.
        const double factor = op == ReduceOp::kSum ? 6 : op == ReduceOp::kAvg ? 2 : op == ReduceOp::kMax ? 3 : 1;
        Tensor expected = ramp(1000, 0, DType::f64);
        Tensor diff = max(abs(sub(t.to(DType::f64), mul(expected, Scalar(factor)))));
        const double tolerance = (dtype == DType::f16 || dtype == DType::bf16) ? 0.02 * factor * 1000 : 1e-9;
        expect(diff.item<double>() <= tolerance, std::string("allreduce ") + reduce_op_name(op) + " " +
                                                     dtype_name(dtype) + " differs by " +
                                                     std::to_string(diff.item<double>()));
      }
    }
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("allreduce gives every rank the same bits, whatever the order of the sums (3 and 4 processes)") {
  // Random float32 values: their sum rounds differently in each order. A small message (the synchronous ring
  // path) and one above GlooSmallAllreduce::kMaxBytes (Gloo's asynchronous path).
  for (int world : {3, 4}) {
    CAPTURE(world);
    auto outcomes = run_job(world, [world](int rank) {
      auto group = init_process_group(syncgrad::test::quick_init());
      for (int64_t n : {int64_t{1000}, int64_t{3} << 20}) {
        Generator gen(100 + static_cast<uint64_t>(rank));
        Tensor t = randn({n}, {}, &gen);
        group->allreduce(t, ReduceOp::kSum)->wait();
        std::vector<Tensor> all;
        for (int r = 0; r < world; ++r) all.push_back(empty({n}));
        group->allgather(all, t)->wait();
        for (int r = 1; r < world; ++r) {
          const bool same = std::memcmp(all[r].data_ptr(), all[0].data_ptr(), all[0].nbytes()) == 0;
          expect(same, "allreduce of " + std::to_string(n) + " floats: rank " + std::to_string(r) +
                           "'s result differs from rank 0's in its bits");
        }
      }
      destroy_process_group();
    });
    expect_all_ok(outcomes);
  }
}

TEST_CASE("broadcast, allgather, reduce_scatter, barrier and queued allreduces between 2 processes") {
  auto outcomes = run_job(2, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init());
    Tensor b = ramp(7, rank, DType::f32);
    group->broadcast(b, 1)->wait();
    expect(b.sum().item<double>() == 2 * 28, "broadcast from root 1");

    std::vector<Tensor> gathered = {zeros({3}, TensorOptions{DType::i64}),
                                    zeros({3}, TensorOptions{DType::i64})};
    group->allgather(gathered, ramp(3, rank, DType::i64))->wait();
    expect(gathered[0].sum().item<int64_t>() == 6 && gathered[1].sum().item<int64_t>() == 12, "allgather");

    Tensor out = zeros({4});
    std::vector<Tensor> inputs = {full({4}, Scalar(double(rank + 1))), full({4}, Scalar(double(10 * (rank + 1))))};
    group->reduce_scatter(out, inputs, ReduceOp::kSum)->wait();
    // Rank 0 gets the sum of the ranks' inputs[0] (1 + 2), rank 1 of inputs[1] (10 + 20).
    expect(out.sum().item<double>() == 4 * (rank == 0 ? 3 : 30), "reduce_scatter");

    // Many collectives in flight at once complete in order with the right values.
    std::vector<Tensor> tensors;
    std::vector<std::shared_ptr<Work>> works;
    for (int i = 0; i < 20; ++i) {
      tensors.push_back(full({1000 + i}, Scalar(double(i + rank))));
      works.push_back(group->allreduce(tensors.back()));
    }
    for (int i = 0; i < 20; ++i) {
      works[i]->wait();
      expect(max(tensors[i]).item<double>() == 2 * i + 1, "queued allreduce " + std::to_string(i));
    }
    group->barrier()->wait();
    destroy_process_group();
  });
  expect_all_ok(outcomes);
}

TEST_CASE("rank 0 can serve the store itself (no launcher)") {
  syncgrad::test::JobOptions options;
  options.parent_serves_store = false;
  auto outcomes = run_job(2, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init());
    Tensor t = ones({10});
    group->allreduce(t)->wait();
    expect(t.sum().item<double>() == 20, "allreduce over a rank-0 store");
    group->barrier()->wait();
    destroy_process_group();
  }, options);
  expect_all_ok(outcomes);
}

TEST_CASE("a rank killed in the middle of allreduces makes the other fail fast, naming it") {
  auto outcomes = run_job(2, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init(std::chrono::milliseconds{60'000}));
    Tensor big = ones({4 << 20});  // 16 MiB
    if (rank == 1) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(getpid(), SIGKILL);
      }).detach();
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      for (;;) group->allreduce(big)->wait();
    } catch (const PeerError& e) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      report(e.what());
      report("seconds " + std::to_string(seconds));
      // Later collectives fail at once with the first error.
      try {
        group->barrier()->wait();
      } catch (const PeerError& later) {
        report(std::string("later: ") + later.what());
      }
    }
  });
  CHECK(outcomes[1].exit_code == 128 + SIGKILL);
  INFO(outcomes[0].report);
  CHECK(outcomes[0].exit_code == 0);
  CHECK(outcomes[0].report.find("rank 0: allreduce #") != std::string::npos);
  CHECK(outcomes[0].report.find("lost the connection to rank 1") != std::string::npos);
  CHECK(outcomes[0].report.find("later: rank 0: barrier #") != std::string::npos);
  CHECK(outcomes[0].seconds < 30);  // far below the 60 s collective timeout: not a hang
}

TEST_CASE("a stuck rank turns into a timeout naming the collective and the rank") {
  auto outcomes = run_job(2, [](int rank) {
    auto group = init_process_group(syncgrad::test::quick_init(std::chrono::milliseconds{1500}));
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      return;
    }
    Tensor t = ones({100});
    group->allreduce(t)->wait();
  });
  INFO(outcomes[0].report);
  CHECK(outcomes[0].exit_code == 1);
  const std::string& text = outcomes[0].report;
  const bool names_it = text.find("allreduce #0") != std::string::npos && text.find("rank 1") != std::string::npos;
  CHECK(names_it);
  // A timeout, not the connection loss that rank 1's exit at 4 s would give: the error came before it woke,
  // whatever the start-up of the two processes cost on this machine.
  CHECK(text.find("timed out after 1500 ms waiting for rank 1") != std::string::npos);
  CHECK(text.find("lost the connection") == std::string::npos);
  CHECK(outcomes[0].seconds < 30);  // not a hang
}

TEST_CASE("init_process_group: ranks that never arrive, a duplicate rank, mismatched world sizes") {
  SUBCASE("never arrived") {
    auto outcomes = run_job(1, [](int) {
      setenv("WORLD_SIZE", "3", 1);
      InitOptions options = syncgrad::test::quick_init();
      options.store_timeout = std::chrono::milliseconds{1000};
      init_process_group(options);
    });
    INFO(outcomes[0].report);
    CHECK(outcomes[0].report.find("rank(s) 1, 2 never arrived") != std::string::npos);
  }
  SUBCASE("duplicate rank") {
    auto outcomes = run_job(2, [](int) {
      setenv("RANK", "1", 1);
      setenv("WORLD_SIZE", "3", 1);
      InitOptions options = syncgrad::test::quick_init();
      options.store_timeout = std::chrono::milliseconds{1500};
      init_process_group(options);
    });
    const std::string all = outcomes[0].report + outcomes[1].report;
    INFO(all);
    CHECK(all.find("rank 1 joined twice") != std::string::npos);
  }
  SUBCASE("world size mismatch") {
    auto outcomes = run_job(2, [](int rank) {
      if (rank == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        setenv("WORLD_SIZE", "3", 1);
      }
      InitOptions options = syncgrad::test::quick_init();
      options.store_timeout = std::chrono::milliseconds{1500};
      init_process_group(options);
    });
    INFO(outcomes[1].report);
    CHECK(outcomes[1].report.find("WORLD_SIZE=3 but an earlier rank with WORLD_SIZE=2") != std::string::npos);
  }
}

TEST_CASE("collective argument errors name the problem") {
  InitOptions options;
  options.rank = 0;
  options.world_size = 1;
  auto group = init_process_group(options);
  Tensor m = zeros({4, 4});
  check_error<ValueError>([&] { group->allreduce(m.t()); }, {"not contiguous"});
  check_error<DTypeError>([&] { group->allreduce(zeros({3}, TensorOptions{DType::i64}), ReduceOp::kAvg); },
                          {"avg needs a floating dtype"});
  check_error<DTypeError>([&] { group->allreduce(zeros({3}, TensorOptions{DType::boolean})); }, {"cannot reduce"});
  check_error<ValueError>([&] { group->broadcast(m, 3); }, {"root 3 is outside 0..0"});
  check_error<ValueError>(
      [&] {
        group->allgather({zeros({4, 4}), zeros({4, 4})}, m);
      },
      {"2 output tensors for world size 1"});
  check_error<ShapeError>([&] { group->allgather({zeros({5})}, m); }, {"output 0 is [5]"});
  check_error<DistributedError>([&] { init_process_group(options); }, {"already initialised"});
  destroy_process_group();
  check_error<DistributedError>([&] { default_group(); }, {"call init_process_group() first"});
  options.backend = "mpi";
  check_error<DistributedError>([&] { init_process_group(options); }, {"backend \"mpi\" is not available"});
  options.backend = "gloo";
  options.init_method = "udp://x";
  check_error<ValueError>([&] { init_process_group(options); }, {"env://, tcp://HOST:PORT, file:///PATH"});
}
