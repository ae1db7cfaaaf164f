// Prefixes complete lines of a byte stream; holds back the unfinished last line until it completes.
#include "tools/launch/line_prefixer.h"

#include <utility>

namespace syncgrad::launch {

LinePrefixer::LinePrefixer(std::string prefix, Sink sink, size_t max_line)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), max_line_(max_line) {}

void LinePrefixer::feed(std::string_view data) {
  std::string out;
  size_t newline;
  while ((newline = data.find('\n')) != std::string_view::npos) {
    out += prefix_;
    out += partial_;
    out += data.substr(0, newline + 1);
    partial_.clear();
    data.remove_prefix(newline + 1);
  }
  partial_ += data;
  if (partial_.size() >= max_line_) {
    out += prefix_;
    out += partial_;
    out += '\n';
    partial_.clear();
  }
  if (!out.empty()) sink_(out);
}

void LinePrefixer::finish() {
  if (partial_.empty()) return;
  sink_(prefix_ + partial_ + "\n");
  partial_.clear();
}

}  // namespace syncgrad::launch
