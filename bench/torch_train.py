"""PyTorch side of bench/train_vs_pytorch.sh: trains the same MLP/CNN as syncgrad-train with the same
hyperparameters (SGD lr 0.05, momentum 0.9, batch 64, shuffled Fashion-MNIST, 1 thread) for a number of steps
and prints 'samples/s N' and the peak RSS. With --amp bf16 the forward and the loss run under
torch.autocast('cpu', dtype=torch.bfloat16) (oneDNN's bfloat16 kernels where the CPU has AVX512_BF16).
Not a dependency of syncgrad; a reference peer for benchmarks.
Usage: torch_train.py mlp|cnn STEPS DATA_DIR [--amp off|bf16]
"""
import gzip
import os
import resource
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_exchange import CNN, MLP, MEAN, STD, read_idx  # noqa: E402


def main(model_name, steps, data_dir, amp="off"):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    x = torch.from_numpy((images - MEAN) / STD).unsqueeze(1)
    y = torch.from_numpy(labels)
    model = MLP() if model_name == "mlp" else CNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.randperm(len(y))
    warmup = 10
    for step in range(steps + warmup):
        if step == warmup:
            start = time.perf_counter()
        index = order[(step * 64) % (len(y) - 64):][:64]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp == "bf16"):
            loss = nn.functional.cross_entropy(model(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"samples/s {steps * 64 / elapsed:.0f} peak_rss_mib {rss:.0f}")


if __name__ == "__main__":
    amp = sys.argv[5] if len(sys.argv) == 6 and sys.argv[4] == "--amp" else "off"
    if amp not in ("off", "bf16") or len(sys.argv) not in (4, 6):
        sys.exit("usage: torch_train.py mlp|cnn STEPS DATA_DIR [--amp off|bf16]")
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], amp)
