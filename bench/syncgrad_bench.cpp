// syncgrad-bench: syncgrad's benchmarks, one program with a subcommand each (docs/BENCHMARKS.md,
// docs/SCALING.md); each prints its own table:
//   syncgrad-bench <subcommand> [its options]        syncgrad-bench <subcommand> --help
// kSubcommands below is the one list of them.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench/subcommands.h"
#include "syncgrad_config.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;  // its line in --help
  int (*main)(int argc, char** argv);
  bool built = true;    // false: this build lacks what it needs (listed as such; it says why when run)
  bool hidden = false;  // started by another subcommand, not by users: not listed
};

const Subcommand kSubcommands[] = {
    {"scaling", "DataParallel against DistributedDataParallel at 1..N workers, with a scaling model",
     bench_scaling_main},
    {"scaling-rank", "one DDP rank of `scaling` (started by it)", bench_scaling_rank_main, true, true},
    {"core", "GEMM vs raw Eigen, add vs memcpy, per-op overhead, a small MLP forward+backward", bench_core_main},
    {"allreduce", "allreduce through the Gloo process group vs raw Gloo (run under syncgrad-launch)",
     bench_allreduce_main, SYNCGRAD_HAVE_GLOO != 0},
    {"data", "DataLoader batches/s for 0/1/2 workers, data-wait share of a CNN training step", bench_data_main},
    {"ddp", "DDP training throughput, world size 1 or 2 (run under syncgrad-launch)", bench_ddp_main},
    {"conv", "per-kernel time split of the CNN's training step (conv/pool kernels on its shapes)", bench_conv_main},
    {"bf16", "bfloat16 on this CPU: its features, vdpbf16ps vs FMA rate, bf16 vs f32 GEMM", bench_bf16_main},
    {"gemm", "float32 GEMM: oneDNN vs the register-tiled kernels vs Eigen on the models' linear layers",
     bench_gemm_main},
    {"resnet", "per-kernel CPU-time split of a ResNet-18/20 training step on its own shapes", bench_resnet_main},
    {"winograd", "3x3 Winograd conv: F(2x2, 3x3) vs F(4x4, 3x3) tiles on the ResNets' layers", bench_winograd_main},
    {"gpt-kernels", "the default GPT's non-GEMM kernels on 1 thread vs N: which ones split between threads",
     bench_gpt_kernels_main},
    {"cuda", "GEMM vs cuBLAS, copies vs cudaMemcpy, the CNN step vs PyTorch on the GPU", bench_cuda_main,
     SYNCGRAD_HAVE_CUDA != 0},
    {"checkpoint", "syncgrad-train checkpoint save/load time and size (GPT, ResNet-18) vs the disk's speed",
     bench_checkpoint_main},
    {"activation-checkpointing", "a GPT step's peak memory and time with or without activation checkpointing",
     bench_activation_checkpointing_main},
    {"trace", "the cost of one timeline span (syncgrad-train --trace), tracing off and on", bench_trace_main},
};

void print_help(std::FILE* out) {
  std::fprintf(out,
               "syncgrad-bench: syncgrad's benchmarks\n"
               "usage: syncgrad-bench <subcommand> [options]   (syncgrad-bench <subcommand> --help: its options)\n\n"
               "subcommands:\n");
  int width = 0;  // the longest listed name's
  for (const Subcommand& s : kSubcommands) {
    if (!s.hidden) width = std::max(width, static_cast<int>(std::strlen(s.name)));
  }
  for (const Subcommand& s : kSubcommands) {
    if (s.hidden) continue;
    std::fprintf(out, "  %-*s %s%s\n", width, s.name, s.summary, s.built ? "" : " [not in this build]");
  }
}

std::string listed_names() {
  std::string names;
  for (const Subcommand& s : kSubcommands) {
    if (s.hidden) continue;
    if (!names.empty()) names += ", ";
    names += s.name;
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "syncgrad-bench: no subcommand given\n");
    print_help(stderr);
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_help(stdout);
    return 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (std::string_view(s.name) != name) continue;
    // The subcommand sees itself as a program: argv[0] "<path> <subcommand>", then its own arguments.
    std::string program = std::string(argv[0]) + " " + std::string(name);
    std::vector<char*> args{program.data()};
    args.insert(args.end(), argv + 2, argv + argc);
    args.push_back(nullptr);
    return s.main(argc - 1, args.data());
  }
  std::fprintf(stderr, "syncgrad-bench: unknown subcommand '%s' (valid: %s; see syncgrad-bench --help)\n", argv[1],
               listed_names().c_str());
  return 2;
}
