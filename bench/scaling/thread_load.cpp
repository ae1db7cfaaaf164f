// Reading /proc/self/task/*/schedstat: "<ns on a core> <ns waiting on a run queue> <timeslices>" per thread.
#include "bench/scaling/thread_load.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace syncgrad::bench {

ThreadLoad ThreadLoad::operator-(const ThreadLoad& e) const {
  return {main_cpu - e.main_cpu, main_wait - e.main_wait, other_cpu - e.other_cpu, other_wait - e.other_wait};
}

ThreadLoad ThreadLoad::operator/(double steps) const {
  return {main_cpu / steps, main_wait / steps, other_cpu / steps, other_wait / steps};
}

std::optional<ThreadLoad> read_thread_load() {
  namespace fs = std::filesystem;
  const std::string self = std::to_string(syscall(SYS_gettid));
  ThreadLoad load;
  std::error_code error;
  bool found_self = false;
  for (const fs::directory_entry& task : fs::directory_iterator("/proc/self/task", error)) {
    std::ifstream in(task.path() / "schedstat");
    double on_core_ns = 0, waiting_ns = 0;
    if (!(in >> on_core_ns >> waiting_ns)) continue;  // a thread that ended meanwhile, or no schedstat
    const bool is_self = task.path().filename() == self;
    found_self = found_self || is_self;
    (is_self ? load.main_cpu : load.other_cpu) += on_core_ns * 1e-9;
    (is_self ? load.main_wait : load.other_wait) += waiting_ns * 1e-9;
  }
  if (error || !found_self) return std::nullopt;
  return load;
}

nlohmann::json to_json(const ThreadLoad& l) {
  return {{"main_cpu", l.main_cpu},
          {"main_wait", l.main_wait},
          {"other_cpu", l.other_cpu},
          {"other_wait", l.other_wait}};
}

ThreadLoad thread_load_from_json(const nlohmann::json& j) {
  return {j.value("main_cpu", 0.0), j.value("main_wait", 0.0), j.value("other_cpu", 0.0), j.value("other_wait", 0.0)};
}

}  // namespace syncgrad::bench
