// launch_ranks: the launcher's store, environment and supervisor, driven from the bench.
#include "bench/scaling/rank_launcher.h"

#include <memory>

#include "distributed/tcp_store.h"
#include "tensor/check.h"
#include "tools/launch/errors.h"
#include "tools/launch/options.h"
#include "tools/launch/rank_env.h"
#include "tools/launch/signal_channel.h"
#include "tools/launch/supervisor.h"
#include "tools/launch/token.h"

namespace syncgrad::bench {

void launch_ranks(int world, const std::vector<std::string>& command) {
  launch::LaunchOptions options;
  options.nproc_per_node = world;
  options.command = command;
  launch::StoreAddress store{options.master_addr, 0, launch::random_token()};
  launch::SignalChannel signals;  // before the store's thread, so that it inherits the blocked signals
  distributed::TCPStoreServer server(store.host, store.port, store.token);
  store.port = server.port();
  // One compute thread per rank, whatever this process was given.
  std::vector<std::string> base;
  for (const std::string& entry : launch::current_environment()) {
    if (entry.rfind("OMP_NUM_THREADS=", 0) != 0) base.push_back(entry);
  }
  launch::Supervisor supervisor(signals, options.grace_period);
  for (int rank = 0; rank < world; ++rank) {
    supervisor.start(rank, command, launch::rank_environment(base, options, rank, store));
  }
  const int status = supervisor.run();
  SYNCGRAD_CHECK(status == 0, distributed::DistributedError, "the DDP run with ", world,
                 " workers failed: the ranks ended with exit status ", status,
                 " (the failing rank's message is above)");
}

}  // namespace syncgrad::bench
