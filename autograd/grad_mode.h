// Thread-local switch for recording autograd history, and scope guards that flip it.
#pragma once

namespace syncgrad::autograd {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

}  // namespace syncgrad::autograd

namespace syncgrad {

// Inside this scope ops record no history (optimizer steps, evaluation).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(autograd::GradMode::is_enabled()) { autograd::GradMode::set_enabled(false); }
  ~NoGradGuard() { autograd::GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Re-enables recording inside a NoGradGuard scope.
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(autograd::GradMode::is_enabled()) { autograd::GradMode::set_enabled(true); }
  ~EnableGradGuard() { autograd::GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace syncgrad
