// rsvg-convert, found on PATH and run without a shell (see png_convert.h).
#include "tools/plot/png_convert.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "tensor/check.h"
#include "tensor/errors.h"

extern char** environ;

namespace syncgrad::plot {

bool rsvg_convert_available() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/rsvg-convert").c_str(), X_OK) == 0) return true;
  }
  return false;
}

void svg_to_png(const std::string& svg, const std::string& png) {
  std::vector<std::string> args = {"rsvg-convert", "--format", "png", "--output", png, svg};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "rsvg-convert", nullptr, nullptr, argv.data(), environ);
  SYNCGRAD_CHECK(spawned == 0, IOError, "cannot run rsvg-convert for ", png, ": ", std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  SYNCGRAD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, IOError, "rsvg-convert failed on ", svg,
                 " (status ", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), "); ", png,
                 " was not written");
}

}  // namespace syncgrad::plot
