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

#include <cstddef>
#include <sstream>
#include <string>
#include <utility>

namespace syncgrad::detail {

// The type a part is composed as: character arrays ("literal") become const char*, so that literals of
// different lengths share one instantiation of the message builder; everything else keeps its type.
template <class T>
struct CheckPart {
  using type = T;
};
template <std::size_t N>
struct CheckPart<char[N]> {
  using type = const char*;
};

template <class... Parts>
[[gnu::cold, gnu::noinline]] std::string compose_check_message(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  return message.str();
}

// The message of a failed check: its parts written with operator<<.
template <class... Parts>
std::string check_message(const Parts&... parts) {
  return compose_check_message<typename CheckPart<Parts>::type...>(parts...);
}

template <class ErrorType>
[[noreturn, gnu::cold, gnu::noinline]] void throw_check_error(std::string message) {
  throw ErrorType(std::move(message));
}

}  // namespace syncgrad::detail

// Throws ErrorType(message) when `condition` is false; the message parts (at least one) are evaluated then only.
#define SYNCGRAD_CHECK(condition, ErrorType, ...)                                                       \
  do {                                                                                                  \
    if (!(condition)) [[unlikely]] {                                                                    \
      ::syncgrad::detail::throw_check_error<ErrorType>(::syncgrad::detail::check_message(__VA_ARGS__)); \
    }                                                                                                   \
  } while (false)
