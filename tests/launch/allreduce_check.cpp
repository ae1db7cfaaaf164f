// Test program for syncgrad-launch across nodes: joins the job through env:// (the launcher's variables,
// its store and token), allreduces a tensor whose elements hold rank+1 on every rank, and checks that
// each element became 1 + 2 + ... + WORLD_SIZE. Prints "allreduce ok: ..." and exits 0 when it did.
#include <chrono>
#include <cstdio>

#include "distributed/errors.h"
#include "distributed/init.h"
#include "syncgrad.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

int main() {
  try {
    InitOptions options;
    options.group.timeout = std::chrono::seconds(30);
    options.store_timeout = std::chrono::seconds(30);
    std::shared_ptr<ProcessGroup> group = init_process_group(options);
    const int rank = group->rank();
    const int world = group->size();
    Tensor values = full({4096}, rank + 1);
    group->allreduce(values)->wait();
    const float expected = static_cast<float>(world * (world + 1) / 2);
    const float* data = values.data_ptr<float>();
    for (int64_t i = 0; i < values.numel(); ++i) {
      if (data[i] != expected) {
        std::printf("element %lld is %g, expected %g\n", static_cast<long long>(i), data[i], expected);
        return 1;
      }
    }
    group->barrier()->wait();
    std::printf("allreduce ok: rank %d of %d got %g\n", rank, world, expected);
    destroy_process_group();
    return 0;
  } catch (const Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
