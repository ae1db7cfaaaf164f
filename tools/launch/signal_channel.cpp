// Blocks the launcher's signals and turns them into readable events on a non-blocking signalfd.
#include "tools/launch/signal_channel.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tools/launch/errors.h"

namespace syncgrad::launch {
namespace {

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGUSR1}) sigaddset(&set, sig);
  struct sigaction hangup {};
  sigaction(SIGHUP, nullptr, &hangup);
  if (hangup.sa_handler != SIG_IGN) sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

SignalChannel::SignalChannel() {
  sigset_t set = handled_signals();
  child_defaults_ = set;
  sigaddset(&child_defaults_, SIGPIPE);
  if (int err = pthread_sigmask(SIG_BLOCK, &set, &old_mask_); err != 0) {
    throw LaunchError(std::string("cannot block signals: ") + std::strerror(err));
  }
  fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    throw LaunchError(std::string("cannot create a signalfd: ") + std::strerror(err));
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe_);
}

SignalChannel::~SignalChannel() {
  close(fd_);
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int SignalChannel::next() {
  signalfd_siginfo info;
  while (true) {
    ssize_t n = read(fd_, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

}  // namespace syncgrad::launch
