// Test program for the flight recorder (tests/flight/test_flight.sh), run as 2 ranks under syncgrad-launch.
// Joins through env:// (the launcher's SYNCGRAD_TIMEOUT applies) and makes one kind of failure happen:
//   flight_probe skip       allreduces "step 0", "step 1", "step 2"; rank 1 skips step 2 and stays alive (sleeps)
//   flight_probe stop       trains the MLP under DDP (0.1 MiB buckets: 2); at step 3 rank 1 stops itself (SIGSTOP) in
//                           backward, from its comm hook, after launching bucket 0
//   flight_probe mismatch   after two matching allreduces, rank 0 allreduces a [1024] tensor, rank 1 a [512] one (run
//                           it with SYNCGRAD_DEBUG=detail); SIGTERM is ignored, so each rank prints its own error
// Every error is printed on stdout as "<ErrorType>: <message>" and ends the program with status 3.
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "autograd/ops/loss.h"
#include "distributed/collective_caller.h"
#include "distributed/ddp.h"
#include "distributed/errors.h"
#include "distributed/init.h"
#include "models/models.h"
#include "syncgrad.h"
#include "tensor/ops/factories.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

namespace {

// The default allreduce hook, except that rank 1 stops itself at `stop_iteration` after launching bucket 0.
class StoppingHook final : public CommHook {
 public:
  StoppingHook(int rank, int64_t stop_iteration) : inner_(allreduce_hook()), rank_(rank), stop_(stop_iteration) {}
  std::string name() const override { return "stopping allreduce"; }
  std::shared_ptr<Work> launch(ProcessGroup& group, GradBucket& bucket) override {
    if (rank_ == 1 && bucket.iteration == stop_ && bucket.index == 1) {
      // Bucket 0's allreduce (already queued) runs to its end first, and the recorder publishes it.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::printf("rank 1 stops itself in backward\n");
      std::fflush(stdout);
      std::raise(SIGSTOP);
    }
    return inner_->launch(group, bucket);
  }
  void finish(ProcessGroup& group, GradBucket& bucket) override { inner_->finish(group, bucket); }

 private:
  std::shared_ptr<CommHook> inner_;
  int rank_;
  int64_t stop_;
};

void skip(ProcessGroup& group) {
  for (int step = 0; step < 3; ++step) {
    if (group.rank() == 1 && step == 2) {
      std::printf("rank 1 skips step 2\n");
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::seconds(30));  // alive, elsewhere; the launcher ends it
      return;
    }
    const CollectiveCaller caller("step %d", step);
    Tensor values = full({4096}, 1.0);
    group.allreduce(values)->wait();
  }
}

void stop(const std::shared_ptr<ProcessGroup>& group) {
  Generator init(0);
  auto model = models::make_model("mlp", &init);
  DDPOptions options;
  options.bucket_cap_mb = 0.1;
  options.first_bucket_mb = 0.1;
  options.comm_hook = std::make_shared<StoppingHook>(group->rank(), 3);
  DistributedDataParallel ddp(model, group, options);
  Generator data(1 + group->rank());
  const Tensor x = randn({16, 784}, {}, &data);
  const Tensor y = randint(0, 10, {16}, {.dtype = DType::i64}, &data);
  for (int step = 0; step < 6; ++step) {
    cross_entropy(ddp(x), y).backward();
    std::printf("step %d done\n", step);
    std::fflush(stdout);
  }
}

void mismatch(ProcessGroup& group) {
  for (int step = 0; step < 2; ++step) {
    const CollectiveCaller caller("warm-up %d", step);
    Tensor values = full({256}, 1.0);
    group.allreduce(values)->wait();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the recorders publish their positions
  const CollectiveCaller caller("shape test");
  Tensor values = full({group.rank() == 0 ? 1024 : 512}, 1.0);
  group.allreduce(values)->wait();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "skip" && mode != "stop" && mode != "mismatch") {
    std::fprintf(stderr, "usage: flight_probe skip|stop|mismatch\n");
    return 2;
  }
  // Both ranks fail at once here: the launcher must not end one (SIGTERM) before it has printed its own error.
  if (mode == "mismatch") std::signal(SIGTERM, SIG_IGN);
  try {
    std::shared_ptr<ProcessGroup> group = init_process_group();
    if (mode == "skip") skip(*group);
    if (mode == "stop") stop(group);
    if (mode == "mismatch") mismatch(*group);
    destroy_process_group();
    std::printf("finished\n");
    return 0;
  } catch (const TimeoutError& e) {
    std::printf("TimeoutError: %s\n", e.what());
  } catch (const PeerError& e) {
    std::printf("PeerError: %s\n", e.what());
  } catch (const DesyncError& e) {
    std::printf("DesyncError: %s\n", e.what());
  } catch (const Error& e) {
    std::printf("Error: %s\n", e.what());
  }
  std::fflush(stdout);
  return 3;
}
