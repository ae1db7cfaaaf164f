// Entry point of the gradcheck suite: runs every gradcheck case, then fails if any registered autograd
// node type was never covered by a passing gradcheck (so a new differentiable op cannot ship without one), or
// if one node name belongs to two different backwards (so one gradcheck cannot stand in for both).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "autograd/gradcheck.h"
#include "autograd/node.h"
#include "tensor/backend.h"

int main(int argc, char** argv) {
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  int status = context.run();
  if (context.shouldExit()) return status;
  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-tc", 0) == 0 || arg.rfind("--test-case", 0) == 0 || arg.rfind("-ts", 0) == 0 ||
        arg.rfind("-sf", 0) == 0 || arg.rfind("--source-file", 0) == 0) {
      filtered = true;
    }
  }
  if (!filtered) {
    const auto& duplicates = syncgrad::autograd::duplicate_node_types();
    if (!duplicates.empty()) {
      std::cerr << "gradcheck coverage: " << duplicates.size() << " node name(s) given to more than one backward:";
      for (const auto& name : duplicates) std::cerr << ' ' << name;
      std::cerr << "\ngive each backward its own name, so a gradcheck of one cannot cover the other.\n";
      std::cout << "[doctest] test cases: 1 | 0 passed | 1 failed | 0 skipped (gradcheck coverage)\n";
      return 1;
    }
    auto missing = syncgrad::autograd::uncovered_node_types();
    // Nodes that only a CUDA device can exercise are gradchecked in tests/test_cuda.cpp (run with a device).
    if (!syncgrad::cuda_is_available()) {
      std::erase_if(missing, [](const std::string& name) {
        if (name != "ToDeviceBackward") return false;
        std::cout << "gradcheck coverage: " << name << " skipped (needs a CUDA device: "
                  << syncgrad::backend_unavailable_reason(syncgrad::DeviceType::kCUDA) << ")\n";
        return true;
      });
    }
    if (!missing.empty()) {
      std::cerr << "gradcheck coverage: " << missing.size() << " differentiable op node(s) have no passing gradcheck:";
      for (const auto& name : missing) std::cerr << ' ' << name;
      std::cerr << "\nadd a CHECK_GRADCHECK case under tests/gradcheck/ for each.\n";
      // Reported as one extra failed test case so the CI line counts it.
      std::cout << "[doctest] test cases: 1 | 0 passed | 1 failed | 0 skipped (gradcheck coverage)\n";
      return 1;
    }
    std::cout << "gradcheck coverage: all " << syncgrad::autograd::registered_node_types().size() - 1
              << " node types covered\n";
  }
  return status;
}
