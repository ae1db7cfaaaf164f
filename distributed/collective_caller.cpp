// The thread-local stack of CollectiveCaller scopes (a linked list through the scope objects themselves).
#include "distributed/collective_caller.h"

namespace syncgrad::distributed {

namespace {
thread_local const CollectiveCaller* innermost = nullptr;
}  // namespace

CollectiveCaller::CollectiveCaller(const char* format, ...) : outer_(innermost) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(label_, sizeof label_, format, args);
  va_end(args);
  innermost = this;
}

CollectiveCaller::~CollectiveCaller() { innermost = outer_; }

const char* CollectiveCaller::current() { return innermost == nullptr ? "" : innermost->label_; }

}  // namespace syncgrad::distributed
