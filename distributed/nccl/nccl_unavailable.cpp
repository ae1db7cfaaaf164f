// The "nccl" process group of a CUDA module built without NCCL (distributed/nccl/meson.build compiles it in
// place of nccl_comm.cpp and nccl_process_group.cpp when NCCL is not found, and into the emulated test module):
// asking for it fails with a DistributedError that says why and how to get it.
#include "distributed/errors.h"
#include "distributed/process_group.h"
#include "tensor/cuda/register.h"

namespace syncgrad::cuda {

void register_nccl_process_group() {
  distributed::register_process_group_backend(
      "nccl", [](std::shared_ptr<distributed::Store>, int rank, int, const distributed::ProcessGroupOptions&)
                  -> std::shared_ptr<distributed::ProcessGroup> {
        throw distributed::DistributedError(
            "rank " + std::to_string(rank) + ": process group backend \"nccl\" is not available: this CUDA module "
            "was built without NCCL (meson found no nccl.h/libnccl). Install NCCL (libnccl-dev, or the CUDA "
            "toolkit's NCCL) and rebuild with -Dnccl=enabled; use backend \"gloo\" for CPU tensors");
      });
}

}  // namespace syncgrad::cuda
