// What an out-of-memory error says about the allocation that failed. The allocators name the bytes and the
// device; what the memory was for is known only higher up, so a caller that knows states it for the duration
// of a scope on its thread, with the hint that fits:
//
//   OutOfMemoryContext context("a training step on a batch of 64 samples (--batch-size 64)",
//                               "try a smaller --batch-size");
//   // "cpu allocator: out of memory allocating 1073741824 bytes (1024.0 MiB) during a training step on a batch
//   //  of 64 samples (--batch-size 64); this process holds ... in tensors; try a smaller --batch-size"
//
// Outside any such scope the error says only what was allocated where (no guess at the cause).
#pragma once

#include <cstddef>
#include <string>

namespace syncgrad {

class OutOfMemoryContext {
 public:
  OutOfMemoryContext(std::string during, std::string hint);
  ~OutOfMemoryContext();
  OutOfMemoryContext(const OutOfMemoryContext&) = delete;
  OutOfMemoryContext& operator=(const OutOfMemoryContext&) = delete;

 private:
  const OutOfMemoryContext* previous_;
  std::string during_;
  std::string hint_;
  friend std::string out_of_memory_during();
  friend std::string out_of_memory_hint();
};

// " during <what>" of the innermost context on this thread, or "".
std::string out_of_memory_during();
// "; <hint>" of the innermost context on this thread, or "".
std::string out_of_memory_hint();

// "1073741824 bytes (1024.0 MiB)"
std::string describe_bytes(size_t bytes);

}  // namespace syncgrad
