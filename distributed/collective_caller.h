// Who issues a collective, for the flight recorder: a thread-local label ("DDP bucket 3", "barrier at checkpoint",
// "SyncBatchNorm forward") that the code around a collective sets for as long as a CollectiveCaller lives. The
// process group reads it when the collective is queued (on the calling thread), so its record and any error
// about it name the caller. Scopes nest; the innermost wins. No allocation: the label is kept in the scope.
//   { CollectiveCaller caller("DDP bucket %zu", index); group.allreduce(buffer); }
#pragma once

#include <cstdarg>
#include <cstdio>

namespace syncgrad::distributed {

class CollectiveCaller {
 public:
  // printf-style label, cut at kMaxLength characters.
  explicit CollectiveCaller(const char* format, ...) __attribute__((format(printf, 2, 3)));
  ~CollectiveCaller();
  CollectiveCaller(const CollectiveCaller&) = delete;
  CollectiveCaller& operator=(const CollectiveCaller&) = delete;

  static constexpr int kMaxLength = 47;

  // The innermost live scope's label on this thread; "" outside every scope.
  static const char* current();

 private:
  char label_[kMaxLength + 1];
  const CollectiveCaller* outer_;
};

}  // namespace syncgrad::distributed
