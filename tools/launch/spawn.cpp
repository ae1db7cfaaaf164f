// spawn_process(): fork + execve with a new process group, default signal dispositions, an empty signal mask,
// output pipes, no inherited descriptors beyond 0..2 and the heartbeat pipe, and PR_SET_PDEATHSIG so that the rank dies with the
// launcher. Between fork and exec the child calls only async-signal-safe functions: PATH is searched in the
// parent (the candidates are prepared there), and an exec failure comes back as errno over a close-on-exec pipe.
#include "tools/launch/spawn.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "tensor/check.h"
#include "tools/launch/errors.h"

namespace syncgrad::launch {
namespace {

// glibc's default search path when PATH is unset (confstr(_CS_PATH)).
constexpr const char* kDefaultPath = "/bin:/usr/bin";

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    SYNCGRAD_CHECK(pipe2(fds, O_CLOEXEC) == 0, LaunchError,
                   "cannot create a pipe for a rank: ", std::strerror(errno));
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    close_read_end();
    close_write_end();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_read_end() {
    if (read_end >= 0) close(read_end);
    read_end = -1;
  }
  void close_write_end() {
    if (write_end >= 0) close(write_end);
    write_end = -1;
  }
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

// The paths execvp would try for `program`, in order: itself when it names a path, else each PATH entry.
std::vector<std::string> candidates(const std::string& program) {
  if (program.find('/') != std::string::npos) return {program};
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : kDefaultPath;
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon - start);
    out.push_back((dir.empty() ? "." : dir) + "/" + program);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

// What the child needs, all prepared before fork.
struct ChildSetup {
  pid_t launcher = -1;
  const std::vector<std::string>* paths = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const sigset_t* reset = nullptr;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int status_fd = -1;  // gets errno when the child cannot become the rank
  int heartbeat_fd = -1;  // the write end the rank keeps (SYNCGRAD_HEARTBEAT_FD)
};

// dup2 that also works when `fd` already is `target` (dup2 would then keep its close-on-exec flag).
bool move_to(int fd, int target) {
  if (fd == target) return fcntl(fd, F_SETFD, 0) == 0;
  return dup2(fd, target) == target;
}

// Marks every descriptor from 3 up close-on-exec (so the status pipe stays open until the exec).
void close_on_exec_from_3() {
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  rlimit limit{};
  const rlim_t most = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur : 65536;
  for (rlim_t fd = 3; fd < most; ++fd) fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
}

[[noreturn]] void fail(const ChildSetup& s, int err) {
  ssize_t ignored = write(s.status_fd, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// In the child after fork: only async-signal-safe calls from here on.
[[noreturn]] void become_rank(const ChildSetup& s) {
  // Die with the launcher (it is the thread that forked: the launcher's main thread); if it died before the
  // prctl took effect, the parent is no longer the launcher and the rank must not start at all.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(s, errno);
  if (getppid() != s.launcher) _exit(127);
  if (setpgid(0, 0) != 0) fail(s, errno);
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(s.reset, sig) == 1) sigaction(sig, &defaults, nullptr);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || !move_to(null_fd, STDIN_FILENO)) fail(s, errno);
  if (!move_to(s.stdout_fd, STDOUT_FILENO) || !move_to(s.stderr_fd, STDERR_FILENO)) fail(s, errno);
  close_on_exec_from_3();
  if (fcntl(s.heartbeat_fd, F_SETFD, 0) != 0) fail(s, errno);
  int err = ENOENT;
  bool denied = false;
  for (const std::string& path : *s.paths) {
    execve(path.c_str(), s.argv, s.envp);
    err = errno;
    if (err == EACCES) {
      denied = true;
    } else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ENODEV && err != ETIMEDOUT) {
      break;
    }
  }
  fail(s, denied && err != ENOEXEC ? EACCES : err);
}

}  // namespace

SpawnedProcess spawn_process(const std::vector<std::string>& command, const std::vector<std::string>& env,
                             const sigset_t& reset) {
  Pipe out;
  Pipe err;
  Pipe status;
  Pipe heartbeat;
  const std::vector<std::string> paths = candidates(command.front());
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string heartbeat_entry = "SYNCGRAD_HEARTBEAT_FD=" + std::to_string(heartbeat.write_end);
  std::vector<char*> envp;
  for (const std::string& e : env) {
    if (e.rfind("SYNCGRAD_HEARTBEAT_FD=", 0) != 0) envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(const_cast<char*>(heartbeat_entry.c_str()));
  envp.push_back(nullptr);
  ChildSetup setup;
  setup.launcher = getpid();
  setup.paths = &paths;
  setup.argv = argv.data();
  setup.envp = envp.data();
  setup.reset = &reset;
  setup.stdout_fd = out.write_end;
  setup.stderr_fd = err.write_end;
  setup.status_fd = status.write_end;
  setup.heartbeat_fd = heartbeat.write_end;

  const pid_t pid = fork();
  SYNCGRAD_CHECK(pid >= 0, LaunchError, "cannot start a rank (fork failed): ", std::strerror(errno),
                 "; is the process limit (ulimit -u) reached?");
  if (pid == 0) become_rank(setup);
  out.close_write_end();
  err.close_write_end();
  status.close_write_end();
  heartbeat.close_write_end();
  // End of file: the exec succeeded (the pipe was close-on-exec); an int: the child's errno.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(status.read_end, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n != 0) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw LaunchError(exec_error(command.front(), n == sizeof child_errno ? child_errno : EIO));
  }
  SpawnedProcess p;
  p.pid = pid;
  p.stdout_fd = out.release_read_end();
  p.stderr_fd = err.release_read_end();
  p.heartbeat_fd = heartbeat.release_read_end();
  return p;
}

}  // namespace syncgrad::launch
