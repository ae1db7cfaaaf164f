// `syncgrad-bench cuda`: loads the CUDA benchmark's shared module from beside this program and runs it
// (bench/cuda_module.h says why it is a module); a build without the CUDA module says so.
#include <dlfcn.h>

#include <cstdio>
#include <filesystem>

#include "bench/cuda_module.h"
#include "bench/subcommands.h"
#include "syncgrad_config.h"

int bench_cuda_main(int argc, char** argv) {
  if (!SYNCGRAD_HAVE_CUDA) {
    std::fprintf(stderr,
                 "syncgrad-bench cuda: this build has no CUDA module (reconfigure with -Dcuda=enabled on a machine "
                 "with the CUDA toolkit: nvcc, cudart and cuBLAS)\n");
    return 1;
  }
  const std::filesystem::path module =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() / kBenchCudaModuleName;
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "syncgrad-bench cuda: cannot load %s: %s (it is built beside syncgrad-bench in build/bench/)\n",
                 module.c_str(), dlerror());
    return 1;
  }
  auto entry = reinterpret_cast<int (*)(int, char**)>(dlsym(handle, kBenchCudaEntryName));
  if (entry == nullptr) {
    std::fprintf(stderr, "syncgrad-bench cuda: %s has no %s: %s\n", module.c_str(), kBenchCudaEntryName, dlerror());
    return 1;
  }
  return entry(argc, argv);  // the module stays loaded until the process exits
}
