// Test program for syncgrad-launch: every rank connects to the store the launcher serves, using only the
// environment (read_launch_env), publishes a key, reads every other rank's and counts arrivals.
// With the argument "wrong-token" it presents a different token and expects the store to refuse it at once
// (a RendezvousError saying the store refused our token). With "one-wrong-token" only the ranks other than 0
// do so, and rank 0, waiting for their keys, expects its timeout to name the refused connections.
#include <chrono>
#include <cstdio>
#include <string>

#include "distributed/errors.h"
#include "distributed/launch_env.h"
#include "distributed/tcp_store.h"

using namespace syncgrad::distributed;

// Rank 0 of "one-wrong-token": its get() of rank 1's key times out (1 s at a time) until the TimeoutError
// names the refused connection.
int expect_refusal_named(TCPStore& store) {
  const std::string note = "has refused 1 connection with a wrong token from 127.0.0.1";
  for (int attempt = 0; attempt < 30; ++attempt) {
    try {
      store.get("rank1");
      std::printf("rank1's key appeared although its token is wrong\n");
      return 1;
    } catch (const TimeoutError& e) {
      if (std::string(e.what()).find(note) != std::string::npos) {
        std::printf("timeout names the refusal: %s\n", e.what());
        return 0;
      }
    }
  }
  std::printf("no timeout named the refused connection\n");
  return 1;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  bool wrong_token = mode == "wrong-token";
  try {
    LaunchEnv env = read_launch_env(true);
    if (!env.store_served || env.store_token.empty()) {
      std::printf("expected SYNCGRAD_STORE_SERVED=1 and a token\n");
      return 1;
    }
    TCPStoreOptions options;
    options.timeout = std::chrono::seconds(20);
    if (mode == "one-wrong-token") {
      wrong_token = env.rank != 0;
      options.timeout = std::chrono::seconds(1);
    }
    options.token = wrong_token ? env.store_token + "x" : env.store_token;
    TCPStore store(env.master_addr, env.master_port, options);
    if (mode == "one-wrong-token") return expect_refusal_named(store);
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
