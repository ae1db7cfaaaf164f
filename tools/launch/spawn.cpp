// spawn_process(): posix_spawnp with a new process group, default signal dispositions, an empty signal
// mask, output pipes and no inherited descriptors beyond 0..2. Exec failures come back as errno.
#include "tools/launch/spawn.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tensor/check.h"
#include "tools/launch/errors.h"

namespace syncgrad::launch {
namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    SYNCGRAD_CHECK(pipe2(fds, O_CLOEXEC) == 0, LaunchError,
                   "cannot create a pipe for a rank's output: ", std::strerror(errno));
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int release_read_end() {
    int fd = read_end;
    read_end = -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
  }
};

std::string exec_error(const std::string& program, int err) {
  std::string what = "cannot execute PROGRAM '" + program + "': ";
  if (err == ENOENT && program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    return what + "not found in PATH (" + (path ? path : "unset") + "); give its path (e.g. ./" + program +
           ") or add its directory to PATH";
  }
  if (err == ENOENT) return what + "no such file; check the path";
  if (err == EACCES) return what + "permission denied; is it an executable file (chmod +x)?";
  if (err == ENOEXEC) return what + "not an executable format; scripts need a #! line";
  return what + std::strerror(err);
}

}  // namespace

SpawnedProcess spawn_process(const std::vector<std::string>& command, const std::vector<std::string>& env,
                             const sigset_t& reset) {
  Pipe out;
  Pipe err;
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end, STDERR_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &reset);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  SYNCGRAD_CHECK(rc == 0, LaunchError, exec_error(command.front(), rc));
  SpawnedProcess p;
  p.pid = pid;
  p.stdout_fd = out.release_read_end();
  p.stderr_fd = err.release_read_end();
  return p;
}

}  // namespace syncgrad::launch
