// `syncgrad-bench cuda` lives in its own shared module (bench/bench_cuda.cpp, built only with the CUDA
// module) because it links cuBLAS and the CUDA runtime for its raw references: syncgrad-bench itself links
// neither and loads this module with dlopen when the subcommand runs (bench/cuda_subcommand.cpp), so every
// other subcommand starts on a machine without the CUDA toolkit.
#pragma once

// The module's file name; it sits beside the syncgrad-bench executable (build/bench/).
inline constexpr const char* kBenchCudaModuleName = "libsyncgrad_bench_cuda.so";
// The module's entry point, looked up with dlsym: the subcommand's main (argv[0] "<syncgrad-bench> cuda").
inline constexpr const char* kBenchCudaEntryName = "syncgrad_bench_cuda_main";
extern "C" int syncgrad_bench_cuda_main(int argc, char** argv);
