// syncgrad-bench: benchmarks as subcommands.
//   syncgrad-bench scaling --model cnn --workers 1,2 --predict --csv s.csv --json s.json --plot s.svg
// measures DataParallel and DistributedDataParallel at each worker count, splits their steps into phases,
// sweeps DDP settings, and checks and extrapolates a model of both (docs/SCALING.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>

#include "tensor/errors.h"
#include "bench/scaling/scaling_command.h"

namespace bench = syncgrad::bench;

int main(int argc, char** argv) {
  CLI::App app{"syncgrad-bench: syncgrad's benchmarks"};
  app.require_subcommand(1);
  bench::ScalingOptions options;
  std::string workers_text, sweeps_text, links_text;
  CLI::App* scaling = app.add_subcommand(
      "scaling", "DataParallel against DistributedDataParallel at 1..N workers, with a scaling model");
  bench::add_scaling_flags(*scaling, options, workers_text, sweeps_text, links_text);
  std::string rank_config, rank_out;
  CLI::App* rank = app.add_subcommand("scaling-rank", "one DDP rank of `scaling` (started by it)");
  rank->group("");  // internal: not listed in --help
  rank->add_option("--config", rank_config)->required();
  rank->add_option("--out", rank_out)->required();
  CLI11_PARSE(app, argc, argv);
  try {
    if (rank->parsed()) return bench::run_scaling_rank(rank_config, rank_out);
    bench::finish_scaling_options(options, workers_text, sweeps_text, links_text);
    return bench::run_scaling(options, std::filesystem::read_symlink("/proc/self/exe").string());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "syncgrad-bench: error: %s\n", e.what());
    return 1;
  }
}
