// Parsing --trace-steps A:B (see trace_steps.h).
#include "tools/train/trace_steps.h"

#include <cerrno>
#include <cstdlib>

#include "tensor/errors.h"

namespace syncgrad::train {
namespace {

// A whole number >= 1 spelling all of `text`, or 0.
int64_t step_number(const std::string& text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return 0;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && *end == '\0' && value >= 1 ? value : 0;
}

}  // namespace

TraceSteps parse_trace_steps(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string hint = "; write A:B, the first and last optimizer step to record (from 1), e.g. 10:12";
  if (colon == std::string::npos) throw ValueError("--trace-steps " + text + ": no colon" + hint);
  const int64_t first = step_number(text.substr(0, colon));
  const int64_t last = step_number(text.substr(colon + 1));
  if (first == 0 || last == 0) {
    throw ValueError("--trace-steps " + text + ": the steps must be whole numbers of at least 1" + hint);
  }
  if (first > last) {
    throw ValueError("--trace-steps " + text + ": the first step (" + std::to_string(first) +
                     ") comes after the last (" + std::to_string(last) + "); write A:B with A <= B, e.g. " +
                     std::to_string(last) + ":" + std::to_string(first));
  }
  return {first, last};
}

std::string to_string(const TraceSteps& steps) {
  return steps.every_step() ? "all" : std::to_string(steps.first) + ":" + std::to_string(steps.last);
}

}  // namespace syncgrad::train
