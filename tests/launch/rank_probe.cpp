// Test program for the rendezvous, timeout and orphan tests (tests/launch/test_timeouts.sh, test_rendezvous.sh,
// test_orphans.sh): joins the job through env:// -- with the defaults, so that the environment's
// SYNCGRAD_TIMEOUT / SYNCGRAD_RENDEZVOUS_TIMEOUT apply as they would to a user's own loop, or with explicit
// timeouts -- prints what it got, then optionally allreduces until a collective fails. Every error is printed
// on stdout as "<ErrorType>: <message>" and ends the program with status 3.
//   launch_rank_probe [--timeout S] [--rendezvous-timeout S] [--pid-dir DIR] [--loop] [--ignore-term]
//                     [--elements N]
// --pid-dir: writes DIR/pid.RANK once joined (before the loop); --ignore-term: SIGTERM is ignored, so that a
// launcher stopping the job cannot end this rank before it has reported its own error.
// Two helper modes that join nothing:
//   launch_rank_probe --silent-listener FILE   a foreign service: listens on a free port of 127.0.0.1 (written to
//                                              FILE), accepts every connection and never says a word
//   launch_rank_probe --free-port              prints a port of 127.0.0.1 that was free a moment ago
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "distributed/errors.h"
#include "distributed/init.h"
#include "syncgrad.h"

using namespace syncgrad;
using namespace syncgrad::distributed;

namespace {

struct Args {
  InitOptions init;
  std::string pid_dir;
  bool loop = false;
  bool ignore_term = false;
  int64_t elements = 1024;
};

std::chrono::milliseconds seconds(const char* text) {
  return std::chrono::milliseconds(static_cast<long long>(std::atof(text) * 1000));
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--timeout" && has_value) {
      a.init.timeout = seconds(argv[++i]);
    } else if (flag == "--rendezvous-timeout" && has_value) {
      a.init.store_timeout = seconds(argv[++i]);
    } else if (flag == "--pid-dir" && has_value) {
      a.pid_dir = argv[++i];
    } else if (flag == "--elements" && has_value) {
      a.elements = std::atoll(argv[++i]);
    } else if (flag == "--loop") {
      a.loop = true;
    } else if (flag == "--ignore-term") {
      a.ignore_term = true;
    } else {
      std::fprintf(stderr, "launch_rank_probe: unknown argument %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return a;
}

// A socket listening on 127.0.0.1, on a free port; its port through `port`.
int listen_on_free_port(int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    std::perror("launch_rank_probe: listen");
    std::exit(2);
  }
  port = ntohs(addr.sin_port);
  return fd;
}

[[noreturn]] void silent_listener(const std::string& port_file) {
  int port = 0;
  const int fd = listen_on_free_port(port);
  std::ofstream(port_file + ".tmp") << port << "\n";
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  std::vector<int> held;
  for (;;) {
    const int client = accept(fd, nullptr, nullptr);
    if (client >= 0) held.push_back(client);
  }
}

int run(const Args& a) {
  std::shared_ptr<ProcessGroup> group = init_process_group(a.init);
  const int rank = group->rank();
  std::printf("joined: rank %d of %d, timeout %lld ms, rendezvous timeout %lld ms\n", rank, group->size(),
              static_cast<long long>(group->timeout().count()),
              static_cast<long long>(default_store()->timeout().count()));
  std::fflush(stdout);
  if (!a.pid_dir.empty()) {
    const std::string path = a.pid_dir + "/pid." + std::to_string(rank);
    std::ofstream(path + ".tmp") << getpid() << "\n";
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  for (long step = 0; a.loop; ++step) {
    Tensor values = full({a.elements}, static_cast<float>(rank + 1));
    group->allreduce(values)->wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  group->barrier()->wait();
  destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--silent-listener") silent_listener(argv[2]);
  if (argc == 2 && std::string(argv[1]) == "--free-port") {
    int port = 0;
    close(listen_on_free_port(port));
    std::printf("%d\n", port);
    return 0;
  }
  const Args args = parse(argc, argv);
  if (args.ignore_term) std::signal(SIGTERM, SIG_IGN);
  try {
    return run(args);
  } catch (const TimeoutError& e) {
    std::printf("TimeoutError: %s\n", e.what());
  } catch (const PeerError& e) {
    std::printf("PeerError: %s\n", e.what());
  } catch (const RendezvousError& e) {
    std::printf("RendezvousError: %s\n", e.what());
  } catch (const Error& e) {
    std::printf("Error: %s\n", e.what());
  }
  std::fflush(stdout);
  return 3;
}
