// The NCCL process group against values computed on the CPU: at world size 1 (NCCL allows one rank per GPU)
// every collective, ReduceOp and dtype, ordering after the compute stream, the Work API, argument and device
// errors (which leave the group usable), a rendezvous that never completes (setup times out and aborts), two
// ranks on one GPU, and a wait that times out (the communicator is aborted, later calls fail at once). With two
// devices, also two ranks as threads: results that combine both, and a peer that never joins a collective.
// Without a usable CUDA device the binary prints why and exits with 77, which meson reports as SKIP (or 1 when
// $SYNCGRAD_TEST_REQUIRE_CUDA is set). tests/meson.build also runs it against a host-memory NCCL stand-in
// ($SYNCGRAD_TEST_NCCL_EMULATED; tests/cuda/emulation/fake_nccl.cpp), which adds injected NCCL errors.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/hash_store.h"
#include "distributed/process_group.h"
#include "tensor/backend.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"
#include "tests/check_error.h"
#include "tests/nccl_ranks.h"

using namespace syncgrad;
using namespace syncgrad::distributed;
using syncgrad::testing::check_error;
using syncgrad::testing::make_rank;
using syncgrad::testing::run_two_ranks;

namespace {

const Device kCuda0(DeviceType::kCUDA, 0);
const DType kReduceDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8};
const DType kAllDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                            DType::i64, DType::i32, DType::u8,  DType::boolean};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin};
const std::vector<Shape> kShapes = {{1000003}, {3, 5}, {1}, {0}};

std::shared_ptr<ProcessGroup> make_group(std::chrono::milliseconds timeout = std::chrono::milliseconds{120'000}) {
  ProcessGroupOptions options;
  options.device_index = 0;
  options.timeout = timeout;
  return make_process_group("nccl", std::make_shared<HashStore>(), 0, 1, options);
}

bool emulated() { return std::getenv("SYNCGRAD_TEST_NCCL_EMULATED") != nullptr; }

// A CPU tensor of `shape` whose element i is a small value that depends on i and `salt` (non-negative for u8,
// 0/1 for bool, with a fraction for floating dtypes), times `scale`; exact in every dtype for scale 1.
Tensor sample(const Shape& shape, DType dtype, int salt, int scale = 1) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 37 + salt * 11) % 23;
    if (dtype == DType::u8) {
      values[i] = static_cast<double>(k * 7);
    } else if (dtype == DType::boolean) {
      values[i] = static_cast<double>(k % 2);
    } else {
      values[i] = static_cast<double>(k - 11) + (is_floating(dtype) ? 0.25 * (i % 4) : 0.0);
    }
  }
  for (double& v : values) v *= scale;
  return from_vector(values, shape, {.dtype = DType::f64}).to(dtype);
}

// What the ranks' contributions reduce to, computed on the CPU in f64 (exact for the sampled values).
Tensor cpu_reduce(const std::vector<Tensor>& contributions, ReduceOp op) {
  std::vector<double> acc = to_vector<double>(contributions[0]);
  for (size_t r = 1; r < contributions.size(); ++r) {
    std::vector<double> x = to_vector<double>(contributions[r]);
    for (size_t i = 0; i < acc.size(); ++i) {
      if (op == ReduceOp::kSum || op == ReduceOp::kAvg) acc[i] += x[i];
      if (op == ReduceOp::kMax) acc[i] = std::max(acc[i], x[i]);
      if (op == ReduceOp::kMin) acc[i] = std::min(acc[i], x[i]);
    }
  }
  if (op == ReduceOp::kAvg) {
    for (double& v : acc) v /= static_cast<double>(contributions.size());
  }
  return from_vector(acc, contributions[0].sizes(), {.dtype = DType::f64}).to(contributions[0].dtype());
}

// The bytes of t in row-major order, on the host.
std::vector<unsigned char> host_bytes(const Tensor& t) {
  Tensor h = raw::contiguous(raw::to(t, kCPU));
  std::vector<unsigned char> bytes(h.nbytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), h.data_ptr(), bytes.size());
  return bytes;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && host_bytes(a) == host_bytes(b);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
  if (!cuda_is_available()) {
    const std::string reason = backend_unavailable_reason(DeviceType::kCUDA);
    if (std::getenv("SYNCGRAD_TEST_REQUIRE_CUDA") != nullptr) {
      std::printf("FAIL test_cuda_nccl: SYNCGRAD_TEST_REQUIRE_CUDA is set but %s\n", reason.c_str());
      return 1;
    }
    std::printf("SKIP test_cuda_nccl: %s\n", reason.c_str());
    std::fflush(stdout);
    return 77;  // meson: skipped
  }
  doctest::Context context(argc, argv);
  return context.run();
}

TEST_CASE("a world-size-1 NCCL group is created on the requested device") {
  auto group = make_group();
  CHECK(group->backend_name() == "nccl");
  CHECK(group->rank() == 0);
  CHECK(group->size() == 1);
  CHECK(group->options().device_index == 0);
  auto second = make_group();  // a second group meets under its own store key
  CHECK(second->backend_name() == "nccl");
}

TEST_CASE("allreduce: every ReduceOp and dtype equals the CPU reduction") {
  auto group = make_group();
  for (DType dtype : kReduceDTypes) {
    for (ReduceOp op : kOps) {
      if (op == ReduceOp::kAvg && !is_floating(dtype)) continue;
      for (const Shape& shape : kShapes) {
        INFO(dtype_name(dtype) << " " << reduce_op_name(op) << " " << shape_str(shape));
        Tensor cpu = sample(shape, dtype, 1);
        Tensor gpu = cpu.to(kCuda0);
        auto work = group->allreduce(gpu, op);
        work->wait();
        CHECK(work->is_completed());
        CHECK(work->error() == nullptr);
        CHECK(gpu.device() == kCuda0);
        CHECK(same_bytes(gpu, cpu_reduce({cpu}, op)));
      }
    }
  }
}

TEST_CASE("broadcast keeps root's values for every dtype") {
  auto group = make_group();
  for (DType dtype : kAllDTypes) {
    for (const Shape& shape : kShapes) {
      INFO(dtype_name(dtype) << " " << shape_str(shape));
      Tensor cpu = sample(shape, dtype, 2);
      Tensor gpu = cpu.to(kCuda0);
      group->broadcast(gpu, 0)->wait();
      CHECK(same_bytes(gpu, cpu));
    }
  }
}

TEST_CASE("allgather fills output r with rank r's input for every dtype") {
  auto group = make_group();
  for (DType dtype : kAllDTypes) {
    for (const Shape& shape : kShapes) {
      INFO(dtype_name(dtype) << " " << shape_str(shape));
      Tensor cpu = sample(shape, dtype, 3);
      Tensor input = cpu.to(kCuda0);
      std::vector<Tensor> outputs = {zeros(shape, {.dtype = dtype, .device = kCuda0})};
      group->allgather(outputs, input)->wait();
      CHECK(same_bytes(outputs[0], cpu));
      CHECK(same_bytes(input, cpu));
    }
  }
}

TEST_CASE("reduce_scatter: every ReduceOp and dtype equals the CPU reduction of inputs[rank]") {
  auto group = make_group();
  for (DType dtype : kReduceDTypes) {
    for (ReduceOp op : kOps) {
      if (op == ReduceOp::kAvg && !is_floating(dtype)) continue;
      for (const Shape& shape : kShapes) {
        INFO(dtype_name(dtype) << " " << reduce_op_name(op) << " " << shape_str(shape));
        Tensor cpu = sample(shape, dtype, 4);
        std::vector<Tensor> inputs = {cpu.to(kCuda0)};
        Tensor output = zeros(shape, {.dtype = dtype, .device = kCuda0});
        group->reduce_scatter(output, inputs, op)->wait();
        CHECK(same_bytes(output, cpu_reduce({cpu}, op)));
      }
    }
  }
}

TEST_CASE("collectives run after the work queued on the compute stream") {
  auto group = make_group();
  // 64 MiB fills are queued on the compute stream and still running when the collective is launched: without
  // the event the NCCL stream would copy stale values.
  const int64_t n = int64_t{1} << 24;
  Tensor input = empty({n}, {.dtype = DType::f32, .device = kCuda0});
  std::vector<Tensor> gathered = {empty({n}, {.dtype = DType::f32, .device = kCuda0})};
  Tensor scattered = empty({n}, {.dtype = DType::f32, .device = kCuda0});
  for (int v = 1; v <= 4; ++v) {
    raw::fill_(input, Scalar(double(v)));
    group->allgather(gathered, input)->wait();
    raw::fill_(input, Scalar(double(10 * v)));
    group->reduce_scatter(scattered, {input}, ReduceOp::kMax)->wait();
    std::vector<float> g = to_vector<float>(gathered[0]), s = to_vector<float>(scattered);
    int64_t bad_gather = 0, bad_scatter = 0;
    for (int64_t i = 0; i < n; ++i) {
      bad_gather += g[i] != float(v);
      bad_scatter += s[i] != float(10 * v);
    }
    INFO("round " << v);
    CHECK(bad_gather == 0);
    CHECK(bad_scatter == 0);
  }
}

TEST_CASE("Works describe their collective; barrier and is_completed polling finish") {
  auto group = make_group();
  Tensor t = ones({262144}, {.dtype = DType::f32, .device = kCuda0});
  auto work = group->allreduce(t, ReduceOp::kSum);
  CHECK(contains(work->description(), "allreduce #0 (sum, float32, 262144 elements)"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!work->is_completed() && std::chrono::steady_clock::now() < deadline) {
  }
  CHECK(work->is_completed());
  work->wait();
  work->wait(std::chrono::milliseconds{1});  // finished: waiting again returns at once
  for (int i = 0; i < 3; ++i) {
    auto b = group->barrier();
    CHECK(contains(b->description(), "barrier #"));
    b->wait();
    CHECK(b->is_completed());
  }
  // A Work dropped without waiting keeps its tensors until the device is done with them.
  group->allgather({zeros({1000}, {.device = kCuda0})}, ones({1000}, {.device = kCuda0}));
  auto last = group->broadcast(t, 0);
  last->wait();
  CHECK(to_vector<float>(t)[262143] == 1.0f);
}

TEST_CASE("argument errors name the tensor and the fix, and leave the group usable") {
  auto group = make_group();
  Tensor good = ones({4, 6}, {.dtype = DType::f32, .device = kCuda0});
  check_error<DeviceError>([&] { group->allreduce(ones({4})); }, {"rank 0", "allreduce", "cpu", "gloo", "cuda:0"});
  check_error<ValueError>([&] { group->allreduce(raw::transpose(good, 0, 1)); }, {"allreduce", "contiguous"});
  check_error<ValueError>([&] { group->broadcast(Tensor()); }, {"broadcast", "undefined"});
  check_error<DTypeError>([&] { group->allreduce(ones({4}, {.dtype = DType::boolean, .device = kCuda0})); },
                          {"rank 0: allreduce", "bool"});
  check_error<DTypeError>([&] { group->allreduce(ones({4}, {.dtype = DType::i32, .device = kCuda0}), ReduceOp::kAvg); },
                          {"allreduce", "avg", "floating"});
  check_error<ValueError>([&] { group->broadcast(good, 1); }, {"broadcast", "root 1", "0..0"});
  check_error<ValueError>([&] { group->allgather({good, good}, good); }, {"allgather", "2 output", "world size 1"});
  check_error<ShapeError>([&] { group->allgather({ones({3}, {.device = kCuda0})}, good); },
                          {"allgather", "output 0", "[3]"});
  check_error<DeviceError>([&] { group->allgather({ones({4, 6})}, good); }, {"allgather", "output 0", "cpu"});
  check_error<ValueError>([&] { group->reduce_scatter(good, {}); }, {"reduce_scatter", "0 input", "world size 1"});
  check_error<ShapeError>([&] { group->reduce_scatter(good, {ones({4, 6}, {.dtype = DType::f64, .device = kCuda0})}); },
                          {"reduce_scatter", "input 0", "float64"});
  if (cuda_device_count() >= 2) {
    check_error<DeviceError>([&] { group->allreduce(ones({4}, {.device = Device(DeviceType::kCUDA, 1)})); },
                             {"cuda:1", "uses cuda:0", "one GPU per rank"});
  }
  group->allreduce(good, ReduceOp::kSum)->wait();
  CHECK(to_vector<float>(good)[23] == 1.0f);
}

TEST_CASE("a device that does not exist is refused with the count and where the index came from") {
  const int count = cuda_device_count();
  ProcessGroupOptions options;
  options.device_index = count;
  check_error<DeviceError>([&] { make_process_group("nccl", std::make_shared<HashStore>(), 0, 1, options); },
                           {"rank 0", "cuda:" + std::to_string(count), "device_index", "out of range",
                            std::to_string(count) + " CUDA device(s)"});
  const std::string n = std::to_string(count);
  const std::string n1 = std::to_string(count + 1);
  setenv("RANK", n.c_str(), 1);
  setenv("WORLD_SIZE", n1.c_str(), 1);
  setenv("LOCAL_RANK", n.c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", n1.c_str(), 1);
  options.device_index = -1;
  check_error<DeviceError>([&] { make_process_group("nccl", std::make_shared<HashStore>(), 0, 1, options); },
                           {"LOCAL_RANK", "out of range", "one GPU per rank"});
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}) unsetenv(name);
}

TEST_CASE("a rendezvous that never completes ends in an error within the timeout, never a hang") {
  // Rank 1 of 2 waits for rank 0's NCCL id, which never comes: the store's timeout.
  ProcessGroupOptions options;
  options.device_index = 0;
  options.timeout = std::chrono::milliseconds{2000};
  auto quick_store = std::make_shared<HashStore>(std::chrono::milliseconds{300});
  check_error<RendezvousError>([&] { make_process_group("nccl", quick_store, 1, 2, options); },
                               {"rank 1", "NCCL id", "nccl/unique_id/"});
  // Rank 0 of 2 publishes its id, but rank 1 never joins: setup is aborted after the group's timeout.
  const auto start = std::chrono::steady_clock::now();
  check_error<TimeoutError>([&] { make_process_group("nccl", std::make_shared<HashStore>(), 0, 2, options); },
                            {"rank 0", "setup", "2000 ms", "not every rank joined", "aborted"});
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("setup with a missing rank failed after " << seconds << " s");
  CHECK(seconds < 60);
}

TEST_CASE("a wait that times out aborts the communicator; later collectives fail at once") {
  if (emulated()) {
    MESSAGE("emulated NCCL: the timeout path is covered by the tests of a peer that never joins");
    return;
  }
  auto group = make_group(std::chrono::milliseconds{60'000});
  const int64_t n = int64_t{1} << 28;  // 1 GiB of f32
  Tensor input = empty({n}, {.dtype = DType::f32, .device = kCuda0});
  std::vector<Tensor> outputs = {empty({n}, {.dtype = DType::f32, .device = kCuda0})};
  group->allgather(outputs, input)->wait();  // from now on the staging block comes from the allocator's cache
  // ~16 GiB of writes (several ms) queued on the compute stream ahead of the collective, which waits for them.
  for (int i = 0; i < 16; ++i) raw::fill_(input, Scalar(double(i)));
  auto work = group->allgather(outputs, input);
  try {
    work->wait(std::chrono::milliseconds{1});
    MESSAGE("the device finished 16 GiB of fills and a 1 GiB gather within 1 ms: the timeout path was not exercised");
    return;
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(contains(msg, "rank 0: allgather #1 (float32, 268435456 elements)"), msg);
    CHECK_MESSAGE(contains(msg, "did not finish within 1 ms"), msg);
    CHECK_MESSAGE(contains(msg, "aborted"), msg);
  }
  CHECK(work->is_completed());
  CHECK(work->error() != nullptr);
  check_error<TimeoutError>([&] { work->wait(); }, {"allgather #1"});  // the same error again, at once
  check_error<DistributedError>([&] { group->barrier(); }, {"rank 0", "barrier #2", "failed earlier", "timed out"});
  auto fresh = make_group();  // a new group works
  Tensor t = ones({8}, {.device = kCuda0});
  fresh->allreduce(t)->wait();
  CHECK(to_vector<float>(t)[7] == 1.0f);
}

TEST_CASE("two ranks on one GPU: NCCL refuses, and the error says to give each rank its own device") {
  auto store = std::make_shared<HashStore>();
  std::string errors[2];
  auto rank_main = [&](int rank) {
    ProcessGroupOptions options;
    options.device_index = 0;
    options.timeout = std::chrono::milliseconds{3000};
    try {
      make_process_group("nccl", store, rank, 2, options);
    } catch (const DistributedError& e) {
      errors[rank] = e.what();
    }
  };
  std::thread other(rank_main, 1);
  rank_main(0);
  other.join();
  INFO("rank 0: " << errors[0]);
  INFO("rank 1: " << errors[1]);
  CHECK(!errors[0].empty());
  CHECK(!errors[1].empty());
  CHECK((contains(errors[0], "same GPU") || contains(errors[1], "same GPU")));
}


TEST_CASE("world size 2 (two devices, ranks as threads): results combine both ranks like the CPU reduction") {
  if (cuda_device_count() < 2) {
    MESSAGE("one CUDA device: world size 2 needs two (one GPU per rank)");
    return;
  }
  auto store = std::make_shared<HashStore>();
  std::vector<std::string> mismatches[2];
  const Shape shape = {1001};
  auto errors = run_two_ranks([&](int rank) {
    const Device device(DeviceType::kCUDA, rank);
    auto group = make_rank(store, rank);
    auto expect = [&](bool ok, const std::string& what) {
      if (!ok) mismatches[rank].push_back(what);
    };
    // Half types are not summed by the emulation at world size 2 (and u8 sums would wrap).
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::i32}) {
      const std::string name = dtype_name(dtype);
      const std::vector<Tensor> x = {sample(shape, dtype, 1, 1), sample(shape, dtype, 1, 2)};
      for (ReduceOp op : kOps) {
        if (op == ReduceOp::kAvg && !is_floating(dtype)) continue;
        Tensor t = x[rank].to(device);
        group->allreduce(t, op)->wait();
        expect(same_bytes(t, cpu_reduce(x, op)), "allreduce " + name + " " + reduce_op_name(op));
        // inputs[k] of rank r holds sample(salt k) * (r + 1); output of rank r reduces inputs[r] of both.
        std::vector<Tensor> inputs = {sample(shape, dtype, 0, rank + 1).to(device),
                                      sample(shape, dtype, 1, rank + 1).to(device)};
        Tensor out = zeros(shape, {.dtype = dtype, .device = device});
        group->reduce_scatter(out, inputs, op)->wait();
        const std::vector<Tensor> parts = {sample(shape, dtype, rank, 1), sample(shape, dtype, rank, 2)};
        expect(same_bytes(out, cpu_reduce(parts, op)), "reduce_scatter " + name + " " + reduce_op_name(op));
      }
      Tensor b = x[rank].to(device);
      group->broadcast(b, 1)->wait();
      expect(same_bytes(b, x[1]), "broadcast root 1 " + name);
      if (!emulated()) {  // the emulation's copies do not wait for an unfinished gather
        std::vector<Tensor> outputs = {zeros(shape, {.dtype = dtype, .device = device}),
                                       zeros(shape, {.dtype = dtype, .device = device})};
        group->allgather(outputs, x[rank].to(device))->wait();
        expect(same_bytes(outputs[0], x[0]) && same_bytes(outputs[1], x[1]), "allgather " + name);
      }
    }
    group->barrier()->wait();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    CHECK(errors[r] == "");
    for (const std::string& m : mismatches[r]) FAIL_CHECK("differs from the CPU: " << m);
  }
}

TEST_CASE("allgather_into_tensor and reduce_scatter_tensor on flat buffers equal the CPU at world size 2") {
  if (cuda_device_count() < 2) {
    MESSAGE("one CUDA device: world size 2 needs two (one GPU per rank)");
    return;
  }
  auto store = std::make_shared<HashStore>();
  std::vector<std::string> mismatches[2];
  const int64_t block = 333;
  auto errors = run_two_ranks([&](int rank) {
    const Device device(DeviceType::kCUDA, rank);
    auto group = make_rank(store, rank);
    auto expect = [&](bool ok, const std::string& what) {
      if (!ok) mismatches[rank].push_back(what);
    };
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::i32}) {
      const std::string name = dtype_name(dtype);
      // Rank r's flat input is sample(salt 0..1, scale r + 1) end to end; its output reduces block r of both.
      const std::vector<Tensor> x = {sample({2 * block}, dtype, 0, 1), sample({2 * block}, dtype, 0, 2)};
      for (ReduceOp op : kOps) {
        if (op == ReduceOp::kAvg && !is_floating(dtype)) continue;
        Tensor out = zeros({block}, {.dtype = dtype, .device = device});
        group->reduce_scatter_tensor(out, x[rank].to(device), op)->wait();
        const std::vector<Tensor> parts = {raw::contiguous(raw::narrow(x[0], 0, rank * block, block)),
                                           raw::contiguous(raw::narrow(x[1], 0, rank * block, block))};
        expect(same_bytes(out, cpu_reduce(parts, op)), "reduce_scatter_tensor " + name + " " + reduce_op_name(op));
      }
      Tensor gathered = zeros({2, block}, {.dtype = dtype, .device = device});
      const std::vector<Tensor> mine = {sample({block}, dtype, 3, 1), sample({block}, dtype, 3, 2)};
      group->allgather_into_tensor(gathered, mine[rank].to(device))->wait();
      Tensor back = gathered.to(kCPU);
      expect(same_bytes(raw::contiguous(raw::select(back, 0, 0)), mine[0]) &&
                 same_bytes(raw::contiguous(raw::select(back, 0, 1)), mine[1]),
             "allgather_into_tensor " + name);
    }
    Tensor t = ones({4}, {.device = device});
    try {
      group->gather({}, t, 0);
      expect(false, "gather on nccl did not throw");
    } catch (const DistributedError& e) {
      expect(std::string(e.what()).find("gather is not implemented by the nccl process group") != std::string::npos,
             std::string("unsupported gather: ") + e.what());
    }
    try {
      group->reduce_scatter_tensor(zeros({3}, {.device = device}), t);
      expect(false, "a mismatched reduce_scatter_tensor did not throw");
    } catch (const ValueError& e) {
      expect(std::string(e.what()).find("the input has 4 elements but must have world size 2 x 3") != std::string::npos,
             std::string("flat size check: ") + e.what());
    }
    group->barrier()->wait();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    CHECK(errors[r] == "");
    for (const std::string& m : mismatches[r]) FAIL_CHECK("differs from the CPU: " << m);
  }
}

TEST_CASE("a peer that never joins a collective: wait times out and aborts; the peer then fails too") {
  if (cuda_device_count() < 2) {
    MESSAGE("one CUDA device: world size 2 needs two (one GPU per rank)");
    return;
  }
  auto store = std::make_shared<HashStore>();
  std::shared_ptr<ProcessGroup> groups[2];
  auto errors = run_two_ranks([&](int rank) { groups[rank] = make_rank(store, rank, std::chrono::milliseconds{500}); });
  REQUIRE(errors[0] == "");
  REQUIRE(errors[1] == "");
  Tensor t0 = ones({64}, {.device = Device(DeviceType::kCUDA, 0)});
  auto stuck = groups[0]->allreduce(t0);  // rank 1 never calls it
  const auto start = std::chrono::steady_clock::now();
  check_error<TimeoutError>([&] { stuck->wait(); },
                            {"rank 0: allreduce #0 (sum, float32, 64 elements) did not finish within 500 ms",
                             "aborted"});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  check_error<DistributedError>([&] { groups[0]->barrier(); }, {"barrier #1", "failed earlier"});
  // Rank 1 now runs a collective whose peer is gone: it fails (a peer error, or its own timeout).
  Tensor t1 = ones({64}, {.device = Device(DeviceType::kCUDA, 1)});
  check_error<DistributedError>([&] { groups[1]->allreduce(t1)->wait(); }, {"rank 1: allreduce #0"});
}

TEST_CASE("an asynchronous NCCL error fails the collective with a PeerError and breaks the group") {
  if (!emulated()) {
    MESSAGE("needs the NCCL stand-in's injected errors ($SYNCGRAD_TEST_NCCL_EMULATED)");
    return;
  }
  setenv("SYNCGRAD_FAKE_NCCL_REMOTE_ERROR_AT", "1", 1);
  auto group = make_group(std::chrono::milliseconds{10'000});
  unsetenv("SYNCGRAD_FAKE_NCCL_REMOTE_ERROR_AT");
  Tensor t = ones({16}, {.device = kCuda0});
  group->allreduce(t)->wait();
  auto failing = group->allreduce(t, ReduceOp::kMax);
  check_error<PeerError>([&] { failing->wait(); },
                         {"rank 0: allreduce #1 (max, float32, 16 elements) failed", "ncclRemoteError",
                          "injected remote error", "peer rank"});
  CHECK(failing->is_completed());
  check_error<DistributedError>([&] { group->broadcast(t); }, {"broadcast #2", "failed earlier", "ncclRemoteError"});
}
