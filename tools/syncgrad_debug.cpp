// syncgrad-debug: looking inside a distributed run after the fact.
//   syncgrad-debug flight DIR [--all]   merges the flight recorder dumps of every rank (distributed/
//                                       flight_recorder.h) found in DIR into one view sorted by sequence number,
//                                       with each rank's state per collective and the first divergence marked ">".
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tools/debug/flight_merge.h"

int main(int argc, char** argv) {
  CLI::App app{"syncgrad-debug: look inside a distributed run"};
  app.require_subcommand(1);
  std::string dir;
  bool all = false;
  CLI::App* flight = app.add_subcommand("flight", "merge the ranks' flight recorder dumps found in DIR");
  flight->add_option("dir", dir, "the directory of the dumps (SYNCGRAD_FLIGHT_DIR of the run)")->required();
  flight->add_flag("--all", all, "show every recorded collective (default: the 10 before the first divergence on)");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto groups = syncgrad::debug::read_flight_dumps(dir);
    bool first = true;
    for (const auto& [group, dumps] : groups) {
      std::printf("%s%s", first ? "" : "\n", syncgrad::debug::merged_flight_view(dumps, all).c_str());
      first = false;
    }
    return 0;
  } catch (const syncgrad::debug::FlightInputError& e) {
    std::fprintf(stderr, "syncgrad-debug flight: %s\n", e.what());
    return 2;
  }
}
