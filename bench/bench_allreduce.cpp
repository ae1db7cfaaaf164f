// syncgrad-bench allreduce: allreduce latency and bandwidth from 4 KiB to 64 MiB through syncgrad's Gloo
// process group and through raw Gloo (the same gloo::allreduce call on its own context, no worker thread) in
// the same run, alternating the two. Run it under the launcher:
//   build/tools/syncgrad-launch --nproc-per-node 2 build/bench/syncgrad-bench allreduce [--rounds 3]
// Rank 0 prints one row per size: median microseconds per allreduce and algorithm bandwidth (bytes / time).
#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/cli_checks.h"
#include "bench/subcommands.h"
#include "distributed/gloo_reduce.h"
#include "distributed/gloo_store.h"
#include "distributed/hash_store.h"
#include "distributed/init.h"
#include "tensor/ops/factories.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using Clock = std::chrono::steady_clock;

namespace {

int iterations_for(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 5, 300));
}

template <class F>
double seconds_per_call(int iterations, F&& call) {
  call();  // warm-up
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) call();
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int bench_allreduce_main(int argc, char** argv) {
  int rounds = 3;
  CLI::App app{"syncgrad-bench allreduce: allreduce through the process group vs raw Gloo (run under syncgrad-launch)"};
  app.add_option("--rounds", rounds, "rounds per size (the median is printed)")->check(syncgrad::cli::at_least(1));
  CLI11_PARSE(app, argc, argv);
  try {
    auto group = init_process_group();
    const int rank = group->rank();
    const int world = group->size();
    if (world < 2) {
      std::fprintf(stderr, "run it with 2 or more ranks: syncgrad-launch --nproc-per-node 2 %s\n", argv[0]);
      return 2;
    }

    // Raw Gloo: its own context on the same address, rendezvous through the job's store.
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto raw_context = std::make_shared<gloo::rendezvous::Context>(rank, world);
    GlooStore raw_store(std::make_shared<PrefixStore>("bench_raw_gloo", default_store()), world);
    auto raw_device = gloo::transport::tcp::CreateDevice(attr);
    raw_context->connectFullMesh(raw_store, raw_device);
    const ReduceKernel sum = reduce_kernel(DType::f32, ReduceOp::kSum, "bench");

    if (rank == 0) {
      std::printf("allreduce between %d ranks (f32 sum), median of %d rounds, syncgrad process group vs raw Gloo\n",
                  world, rounds);
      std::printf("%10s %12s %12s %12s %12s %8s\n", "size", "syncgrad us", "raw us", "syncgrad GB/s", "raw GB/s",
                  "ratio");
    }
    uint32_t raw_tag = 0;
    for (size_t bytes = 4u << 10; bytes <= (64u << 20); bytes *= 4) {
      const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
      Tensor tensor = ones({n});
      const int iterations = iterations_for(bytes);
      std::vector<double> ours, raw;
      for (int round = 0; round < rounds; ++round) {
        ours.push_back(seconds_per_call(iterations, [&] { group->allreduce(tensor)->wait(); }));
        raw.push_back(seconds_per_call(iterations, [&] {
          gloo::AllreduceOptions opts(raw_context);
          opts.setOutput(tensor.data_ptr<float>(), static_cast<size_t>(n));
          opts.setReduceFunction(sum);
          opts.setTag(raw_tag++);
          gloo::allreduce(opts);
        }));
      }
      const double a = median(ours), b = median(raw);
      if (rank == 0) {
        const std::string size = bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB"
                                                     : std::to_string(bytes >> 10) + " KiB";
        std::printf("%10s %12.1f %12.1f %12.3f %12.3f %8.3f\n", size.c_str(), a * 1e6, b * 1e6, bytes / a / 1e9,
                    bytes / b / 1e9, b / a);
      }
    }
    group->barrier()->wait();
    destroy_process_group();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench allreduce: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
