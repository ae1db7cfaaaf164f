// Test program for syncgrad-launch: every rank connects to the store the launcher serves, using only the
// environment (read_launch_env), publishes a key, reads every other rank's and counts arrivals.
// With the argument "wrong-token" it presents a different token and expects the store to refuse it at once
// (a RendezvousError saying the store refused our token).
#include <chrono>
#include <cstdio>
#include <string>

#include "distributed/errors.h"
#include "distributed/launch_env.h"
#include "distributed/tcp_store.h"

using namespace syncgrad::distributed;

int main(int argc, char** argv) {
  bool wrong_token = argc > 1 && std::string(argv[1]) == "wrong-token";
  try {
    LaunchEnv env = read_launch_env(true);
    if (!env.store_served || env.store_token.empty()) {
      std::printf("expected SYNCGRAD_STORE_SERVED=1 and a token\n");
      return 1;
    }
    TCPStoreOptions options;
    options.timeout = std::chrono::seconds(20);
    options.token = wrong_token ? env.store_token + "x" : env.store_token;
    TCPStore store(env.master_addr, env.master_port, options);
    std::string me = std::to_string(env.rank);
    store.set("rank" + me, "hello from " + me);
    store.add("arrived", 1);
    for (int r = 0; r < env.world_size; ++r) {
      std::string value = store.get_string("rank" + std::to_string(r));
      if (value != "hello from " + std::to_string(r)) {
        std::printf("rank%d holds '%s'\n", r, value.c_str());
        return 1;
      }
    }
    store.wait({"rank0"});
    std::printf("store ok: rank %d of %d read all %d keys from %s:%u\n", env.rank, env.world_size, env.world_size,
                env.master_addr.c_str(), static_cast<unsigned>(env.master_port));
    return wrong_token ? 1 : 0;
  } catch (const RendezvousError& e) {
    const bool refused = std::string(e.what()).find("refused our token") != std::string::npos;
    std::printf("%s: %s\n", wrong_token && refused ? "rejected" : "error", e.what());
    return wrong_token && refused ? 0 : 1;
  } catch (const syncgrad::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
