// launch_ranks (the scaling bench's way of starting DDP ranks): every rank gets torchrun's environment with one
// compute thread; a failing rank stops the others and becomes an error naming its exit status.
#include <doctest/doctest.h>

#include "distributed/errors.h"
#include "tests/check_error.h"
#include "bench/scaling/rank_launcher.h"

using namespace syncgrad;

TEST_CASE("launch_ranks runs every rank with RANK, WORLD_SIZE and OMP_NUM_THREADS=1") {
  setenv("OMP_NUM_THREADS", "4", 1);  // the ranks get 1 whatever the bench was given
  bench::launch_ranks(3, {"sh", "-c",
                          "[ \"$WORLD_SIZE\" = 3 ] && [ \"$OMP_NUM_THREADS\" = 1 ] && [ \"$RANK\" -ge 0 ] && "
                          "[ \"$RANK\" -lt 3 ] && [ -n \"$MASTER_PORT\" ]"});
  unsetenv("OMP_NUM_THREADS");
}

TEST_CASE("launch_ranks: a failing rank stops the others and is an error naming its status") {
  // Rank 1 fails at once; rank 0 would sleep for 10 minutes unless it is stopped.
  testing::check_error<distributed::DistributedError>(
      [] {
        bench::launch_ranks(2, {"sh", "-c", "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 600"});
      },
      {"2 workers", "exit status 3"});
  testing::check_error<Error>([] { bench::launch_ranks(1, {"/nonexistent/syncgrad-rank"}); },
                              {"/nonexistent/syncgrad-rank"});
}
