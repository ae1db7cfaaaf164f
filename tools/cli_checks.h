// CLI11 validators for the programs' numeric options whose refusals print the allowed range readably
// (CLI11's own PositiveNumber/NonNegativeNumber print "Value 0 not in range 0.000000 to <309 digits>"):
//   app.add_option("--epochs", c.epochs, "...")->check(syncgrad::cli::at_least(1));
//   --epochs: 0 is not allowed: use a whole number of at least 1
//   app.add_option("--workers", c.workers, "...")->check(syncgrad::cli::whole_in(0, 256));
//   --workers: 100000 is out of range: use a whole number from 0 to 256
//   app.add_option("--lr", c.lr, "...")->check(syncgrad::cli::real_at_least(0));
//   --lr: nan is not allowed: use a finite number of at least 0
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace syncgrad::cli {

namespace detail {

// The whole number `text` spells (all of it), or false.
inline bool parse_whole(const std::string& text, long long& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end != nullptr && *end == '\0';
}

inline bool parse_real(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != nullptr && *end == '\0';
}

inline std::string number(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace detail

// A whole number in [lowest, highest].
inline CLI::Validator whole_in(long long lowest, long long highest) {
  const std::string range = "from " + std::to_string(lowest) + " to " + std::to_string(highest);
  return CLI::Validator(
      [lowest, highest, range](std::string& text) {
        long long value = 0;
        if (!detail::parse_whole(text, value)) return text + " is not a whole number: use one " + range;
        if (value < lowest || value > highest) return text + " is out of range: use a whole number " + range;
        return std::string();
      },
      std::to_string(lowest) + " to " + std::to_string(highest));
}

// A whole number >= lowest.
inline CLI::Validator at_least(long long lowest) {
  const std::string allowed = "a whole number of at least " + std::to_string(lowest);
  return CLI::Validator(
      [lowest, allowed](std::string& text) {
        long long value = 0;
        if (!detail::parse_whole(text, value)) return text + " is not a whole number: use " + allowed;
        if (value < lowest) return text + " is not allowed: use " + allowed;
        return std::string();
      },
      ">= " + std::to_string(lowest));
}

// A finite number >= lowest.
inline CLI::Validator real_at_least(double lowest) {
  const std::string allowed = "a finite number of at least " + detail::number(lowest);
  return CLI::Validator(
      [lowest, allowed](std::string& text) {
        double value = 0;
        if (!detail::parse_real(text, value)) return text + " is not a number: use " + allowed;
        if (!std::isfinite(value) || value < lowest) return text + " is not allowed: use " + allowed;
        return std::string();
      },
      ">= " + detail::number(lowest));
}

// A finite number > lowest.
inline CLI::Validator real_above(double lowest) {
  const std::string allowed = "a finite number above " + detail::number(lowest);
  return CLI::Validator(
      [lowest, allowed](std::string& text) {
        double value = 0;
        if (!detail::parse_real(text, value)) return text + " is not a number: use " + allowed;
        if (!std::isfinite(value) || value <= lowest) return text + " is not allowed: use " + allowed;
        return std::string();
      },
      "> " + detail::number(lowest));
}

}  // namespace syncgrad::cli
