// `syncgrad-bench scaling --model cnn --workers 1,2 --predict --csv s.csv --json s.json --plot s.svg`
// measures DataParallel and DistributedDataParallel at each worker count, splits their steps into phases,
// sweeps DDP settings, and checks and extrapolates a model of both (docs/SCALING.md). Each DDP rank is this
// program again, as the hidden subcommand `scaling-rank`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "bench/scaling/scaling_command.h"
#include "bench/subcommands.h"

namespace bench = syncgrad::bench;

int bench_scaling_main(int argc, char** argv) {
  CLI::App app{"DataParallel against DistributedDataParallel at 1..N workers, with a scaling model"};
  bench::ScalingOptions options;
  std::string workers_text, sweeps_text, links_text;
  bench::add_scaling_flags(app, options, workers_text, sweeps_text, links_text);
  CLI11_PARSE(app, argc, argv);
  try {
    bench::finish_scaling_options(options, workers_text, sweeps_text, links_text);
    return bench::run_scaling(options, std::filesystem::read_symlink("/proc/self/exe").string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench: error: %s\n", e.what());
    return 1;
  }
}

int bench_scaling_rank_main(int argc, char** argv) {
  CLI::App app{"one DDP rank of `syncgrad-bench scaling` (started by it)"};
  std::string rank_config, rank_out;
  app.add_option("--config", rank_config)->required();
  app.add_option("--out", rank_out)->required();
  CLI11_PARSE(app, argc, argv);
  try {
    return bench::run_scaling_rank(rank_config, rank_out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench: error: %s\n", e.what());
    return 1;
  }
}
