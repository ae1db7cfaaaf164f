# One line naming the benchmark peer: PyTorch's version, where it came from, its BLAS and oneDNN, and the CPU.
import platform
import re

import torch

config = torch.__config__.show()
blas = re.search(r"BLAS_INFO=(\w+)", config)
mkldnn = torch.backends.mkldnn.is_available()
cpu = "unknown CPU"
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
print(f"peer: PyTorch {torch.__version__} (Python {platform.python_version()}), "
      f"BLAS {blas.group(1) if blas else 'unknown'}, oneDNN {'on' if mkldnn else 'off'}, "
      f"CPU {cpu}, {torch.get_num_threads()} threads")
