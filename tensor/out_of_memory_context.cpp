// The thread's innermost OutOfMemoryContext (see out_of_memory_context.h).
#include "tensor/out_of_memory_context.h"

#include <cstdio>

namespace syncgrad {
namespace {

thread_local const OutOfMemoryContext* innermost = nullptr;

}  // namespace

OutOfMemoryContext::OutOfMemoryContext(std::string during, std::string hint)
    : previous_(innermost), during_(std::move(during)), hint_(std::move(hint)) {
  innermost = this;
}

OutOfMemoryContext::~OutOfMemoryContext() { innermost = previous_; }

std::string out_of_memory_during() { return innermost ? " during " + innermost->during_ : std::string(); }

std::string out_of_memory_hint() { return innermost && !innermost->hint_.empty() ? "; " + innermost->hint_ : ""; }

std::string describe_bytes(size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu bytes (%.1f MiB)", bytes, static_cast<double>(bytes) / 1048576.0);
  return text;
}

}  // namespace syncgrad
