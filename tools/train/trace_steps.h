// --trace-steps A:B: the window of optimizer steps a --trace records (A to B inclusive, counted from 1 as the
// progress lines count them; a resumed run goes on counting). Parsing refuses anything but two whole numbers
// 1 <= A <= B, naming the value:
//   --trace-steps 5:2: the first step (5) comes after the last (2); write A:B with A <= B, e.g. 2:5
#pragma once

#include <cstdint>
#include <string>

namespace syncgrad::train {

struct TraceSteps {
  int64_t first = 0;  // 0: every step
  int64_t last = 0;
  bool every_step() const { return first == 0; }
  bool contains(int64_t step) const { return every_step() || (step >= first && step <= last); }
  bool operator==(const TraceSteps&) const = default;
};

TraceSteps parse_trace_steps(const std::string& text);
std::string to_string(const TraceSteps& steps);  // "A:B", or "all"

}  // namespace syncgrad::train
