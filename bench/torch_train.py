"""PyTorch side of bench/train_vs_pytorch.sh and bench/gpu_models_vs_pytorch.sh: trains the same MLP/CNN as
syncgrad-train with the same hyperparameters (SGD lr 0.05, momentum 0.9, batch 64, shuffled Fashion-MNIST) for
a number of steps after WARMUP untimed steps and prints 'samples/s N peak_rss_mib M' (on cuda followed by
'peak_device_mib D'). With --amp bf16 the forward and the loss run under bfloat16 autocast (on the CPU oneDNN's
bfloat16 kernels where the CPU has AVX512_BF16).
--device cpu (default): OMP_NUM_THREADS threads (1 unless set). --device cuda: the batch is gathered on the host, as syncgrad-train's loader
does, and copied from pinned memory without blocking; float32 math without TF32 (syncgrad's default); the
device is synchronised at both ends of the timed steps; threads are left to PyTorch.
Not a dependency of syncgrad; a reference peer for benchmarks.
Usage: torch_train.py mlp|cnn STEPS DATA_DIR [--amp off|bf16] [--device cpu|cuda] [--batch 64] [--warmup 10]
"""
import argparse
import os
import resource
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_device import finish_timing, prepare_device, start_timing, to_device  # noqa: E402
from torch_exchange import CNN, MLP, MEAN, STD, read_idx  # noqa: E402


def find(data_dir, name):
    """The IDX file `name` in data_dir, gzipped or not."""
    for candidate in (name + ".gz", name):
        if os.path.exists(os.path.join(data_dir, candidate)):
            return os.path.join(data_dir, candidate)
    raise SystemExit(f"missing {name}(.gz) in {data_dir}")


def main(args):
    device = prepare_device(args.device)
    torch.manual_seed(0)
    images = read_idx(find(args.data_dir, "train-images-idx3-ubyte")).astype(np.float32) / 255.0
    labels = read_idx(find(args.data_dir, "train-labels-idx1-ubyte")).astype(np.int64)
    x = torch.from_numpy((images - MEAN) / STD).unsqueeze(1)  # (N, 1, 28, 28), on the host
    y = torch.from_numpy(labels)
    model = (MLP() if args.model == "mlp" else CNN()).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.randperm(len(y))
    batch = args.batch
    for step in range(args.steps + args.warmup):
        if step == args.warmup:
            start = start_timing(device)
        index = order[(step * batch) % (len(y) - batch):][:batch]
        inputs, targets = to_device(x[index], device), to_device(y[index], device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp == "bf16"):
            loss = nn.functional.cross_entropy(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    elapsed, _, memory = finish_timing(device, start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"samples/s {args.steps * batch / elapsed:.0f} peak_rss_mib {rss:.0f}{memory}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="PyTorch peer of syncgrad-train --model mlp|cnn")
    parser.add_argument("model", choices=("mlp", "cnn"))
    parser.add_argument("steps", type=int, help="timed steps")
    parser.add_argument("data_dir", help="Fashion-MNIST IDX files")
    parser.add_argument("--amp", choices=("off", "bf16"), default="off")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    main(parser.parse_args())
