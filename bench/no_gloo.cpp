// `syncgrad-bench allreduce` in a build without Gloo: meson compiles this in place of bench/bench_allreduce.cpp.
#include <cstdio>

#include "bench/subcommands.h"

int bench_allreduce_main(int, char**) {
  std::fprintf(stderr,
               "syncgrad-bench allreduce: this build has no Gloo process group (install libgloo-dev and reconfigure "
               "with -Dgloo=enabled)\n");
  return 1;
}
