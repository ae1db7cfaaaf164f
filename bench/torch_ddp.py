"""PyTorch side of bench/ddp_vs_pytorch.sh: DistributedDataParallel over gloo on the same MLP/CNN, synthetic
batches of 64 per rank, one thread per rank, 5 warm-up steps, then STEPS timed steps; rank 0 prints
'samples/s N'. Usage: torch_ddp.py mlp|cnn STEPS WORLD
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_exchange import CNN, MLP  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from torch_spawn import spawn  # noqa: E402


def main(model_name, steps):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(MLP() if model_name == "mlp" else CNN())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(64, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (64,), generator=generator)
    warmup = 5
    for step in range(warmup + steps):
        if step == warmup:
            dist.barrier()
            start = time.perf_counter()
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"samples/s {steps * 64 * dist.get_world_size() / elapsed:.0f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    spawn(int(sys.argv[3]), main, sys.argv[1], int(sys.argv[2]))
