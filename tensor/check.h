// SYNCGRAD_CHECK(condition, ErrorType, parts...): the one-line form of "if the condition fails, throw ErrorType
// with a message built from the parts", in the manner of PyTorch's TORCH_CHECK:
//
//   SYNCGRAD_CHECK(n > 0, ValueError, "DataLoader: batch_size ", n, " is not positive; hint: pass 1 or more");
//
// The message is the parts written one after the other with operator<< (so a number prints as std::ostream
// prints it: an integer in full, a double with 6 significant digits; pass std::to_string(x) to get "%f").
//
// A macro, not a function, so that the parts are evaluated only when the check fails: a function template
// would build its arguments (std::string temporaries, shape_str(...), ...) on every call, also on the hot path
// where the condition holds. What the check costs when it passes is the test of the condition and a branch
// the compiler knows is unlikely; the message is built and thrown out of line, in cold code.
#pragma once

#include <sstream>
#include <string>
#include <tuple>
#include <utility>

namespace syncgrad::detail {

// The message of a failed check: its parts written with operator<<. The macro hands the parts over as one
// std::tuple of values (a literal decays to const char*, so literals of any length share one instantiation),
// built only once the check has failed: passing them one by one, or by reference, makes the calling function
// keep locals in memory or set up a frame pointer, which slows the path where the check passes.
template <class... Parts>
[[gnu::cold, gnu::noinline]] std::string check_message(const std::tuple<Parts...>& parts) {
  std::ostringstream message;
  std::apply([&message](const auto&... part) { (message << ... << part); }, parts);
  return message.str();
}

template <class ErrorType>
[[noreturn, gnu::cold, gnu::noinline]] void throw_check_error(std::string message) {
  throw ErrorType(std::move(message));
}

}  // namespace syncgrad::detail

// Throws ErrorType(message) when `condition` is false; the message parts (at least one) are evaluated then only.
#define SYNCGRAD_CHECK(condition, ErrorType, ...)                                                                     \
  do {                                                                                                                \
    if (!(condition)) [[unlikely]] {                                                                                  \
      ::syncgrad::detail::throw_check_error<ErrorType>(::syncgrad::detail::check_message(::std::tuple(__VA_ARGS__))); \
    }                                                                                                                 \
  } while (false)
