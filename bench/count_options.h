// The `--threads N` / `--reps N` options that several syncgrad-bench subcommands take (gemm, winograd): parsed
// into the given defaults, with --help and the refusal of anything else worded alike.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace syncgrad::bench {

// Parses argv[1..argc) into threads and reps (each a count >= 1). Returns the exit status when the subcommand
// should stop: 0 after --help (usage printed), 2 on anything else (the argument named on stderr).
inline std::optional<int> parse_count_options(int argc, char** argv, const char* subcommand, int& threads,
                                              int& reps) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const int value = (arg == "--threads" || arg == "--reps") && i + 1 < argc ? std::atoi(argv[i + 1]) : 0;
    if (value >= 1) {
      (arg == "--threads" ? threads : reps) = value;
      ++i;
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: syncgrad-bench %s [--threads N] [--reps N]   (N >= 1)\n", subcommand);
      return 0;
    } else {
      std::fprintf(stderr, "syncgrad-bench %s: unknown or incomplete argument '%s' (--threads and --reps take "
                   "a count >= 1; see --help)\n", subcommand, arg.c_str());
      return 2;
    }
  }
  return std::nullopt;
}

}  // namespace syncgrad::bench
