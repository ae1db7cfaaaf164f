"""The --device switch shared by the PyTorch benchmark peers (torch_train.py, torch_resnet.py, torch_gpt.py):
cpu runs them on OMP_NUM_THREADS threads (1 unless set: bench/peer.sh sets it from SYNCGRAD_BENCH_THREADS);
cuda takes device 0 with float32 math as syncgrad's CUDA backend does it by default (no TF32 in cuBLAS or
cuDNN, cuDNN's heuristic algorithm choice), copies host batches from pinned memory without blocking,
synchronises the device at both ends of the timed region, and reports the peak memory of PyTorch's caching
allocator. Not a dependency of syncgrad.
"""
import os
import time

import torch


def prepare_device(name):
    """torch.device for 'cpu' or 'cuda'; exits with the reason when cuda is asked for and absent."""
    if name == "cpu":
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SystemExit(f"unavailable: torch {torch.__version__} sees no CUDA device (torch.cuda.is_available())")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    return torch.device("cuda", 0)


def to_device(tensor, device):
    """A host tensor on `device` (cuda: through pinned memory, without blocking the host)."""
    if device.type == "cpu":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


def start_timing(device):
    """(wall, CPU) start times, taken after the device finished the work queued so far."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter(), time.process_time()


def finish_timing(device, start):
    """(wall seconds, CPU seconds, ' peak_device_mib D' on cuda or '') since start_timing, after the device
    finished the timed work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    memory = ""
    if device.type == "cuda":
        memory = f" peak_device_mib {torch.cuda.max_memory_allocated(device) / 2**20:.0f}"
    return elapsed, cpu, memory
