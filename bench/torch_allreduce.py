"""PyTorch's all_reduce over gloo for the sizes syncgrad-bench allreduce measures (f32 sum, median of rounds).
Usage: torch_allreduce.py [rounds] [world=2]"""
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, __import__("os").path.dirname(__file__))
from torch_spawn import spawn  # noqa: E402


def seconds_per_call(iterations, call):
    call()
    start = time.perf_counter()
    for _ in range(iterations):
        call()
    return (time.perf_counter() - start) / iterations


def main(rounds):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        print(f"torch {torch.__version__} all_reduce over gloo, {dist.get_world_size()} ranks, median of {rounds}")
        print(f"{'size':>10} {'torch us':>12} {'torch GB/s':>12}")
    size = 4 << 10
    while size <= 64 << 20:
        tensor = torch.ones(size // 4)
        iterations = max(5, min(300, (256 << 20) // size))
        times = [seconds_per_call(iterations, lambda: dist.all_reduce(tensor)) for _ in range(rounds)]
        t = statistics.median(times)
        if rank == 0:
            label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
            print(f"{label:>10} {t * 1e6:12.1f} {size / t / 1e9:12.3f}")
        size *= 4
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    spawn(int(sys.argv[2]) if len(sys.argv) > 2 else 2, main, int(sys.argv[1]) if len(sys.argv) > 1 else 3)
