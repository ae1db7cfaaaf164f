// Test helper: runs a call that must throw E and checks that the message contains every given fragment.
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "tensor/errors.h"

namespace syncgrad::testing {

template <class E = Error, class Fn>
void check_error(Fn&& call, std::initializer_list<std::string> fragments) {
  try {
    call();
    FAIL_CHECK("expected an exception");
  } catch (const E& e) {
    std::string msg = e.what();
    for (const std::string& f : fragments) {
      CHECK_MESSAGE(msg.find(f) != std::string::npos, msg << " lacks '" << f << "'");
    }
  }
}

}  // namespace syncgrad::testing
