// SignalChannel: the signals syncgrad-launch reacts to (SIGCHLD, SIGINT, SIGTERM, SIGUSR1, and SIGHUP unless it
// was ignored, as under nohup), blocked in the creating thread -- and so in every thread started after it, such
// as the store server's -- and read from a signalfd in the supervisor's poll loop. Also ignores SIGPIPE: a
// closed stdout must not kill the launcher while its ranks run.
#pragma once

#include <signal.h>

namespace syncgrad::launch {

class SignalChannel {
 public:
  SignalChannel();  // LaunchError when the signalfd cannot be made
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  int fd() const { return fd_; }
  // The next pending signal's number, or 0 when none is pending.
  int next();
  // The signals a child must get back at their defaults (the handled ones and SIGPIPE).
  const sigset_t& child_defaults() const { return child_defaults_; }

 private:
  int fd_ = -1;
  sigset_t child_defaults_;
  sigset_t old_mask_;
  struct sigaction old_pipe_;
};

}  // namespace syncgrad::launch
