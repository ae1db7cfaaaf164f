"""PyTorch side of bench/resnet_vs_pytorch.sh: trains the same ResNet as `syncgrad-train --model resnetNN
--dataset cifar10` (tests/train/torch_resnet_model.py) with the same settings: CIFAR-10 binary batches, random
crop with padding 4, horizontal flip, per-channel normalisation (done per batch in this thread, as
syncgrad-train --workers 0 does), SGD lr 0.05 momentum 0.9, 1 thread. Times STEPS steps after WARMUP steps and
prints 'samples/s N peak_rss_mib M cpu_samples/s C' (C: per second of
CPU time, robust to a loaded machine). Not a dependency of syncgrad; a reference peer for benchmarks.
Usage: torch_resnet.py resnet18|resnet20 STEPS DATA_DIR BATCH [WARMUP=2]
"""
import os
import resource
import sys
import time

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_resnet_model import MODELS, normalize, read_cifar10  # noqa: E402


def augment(images_u8, generator):
    """Random crop 32 from the image zero-padded by 4, then a horizontal flip with probability 0.5."""
    x = F.pad(torch.from_numpy(images_u8), (4, 4, 4, 4))
    offsets = torch.randint(0, 9, (len(images_u8), 2), generator=generator)
    flips = torch.rand(len(images_u8), generator=generator) < 0.5
    crops = []
    for image, (dy, dx), flip in zip(x, offsets.tolist(), flips.tolist()):
        crop = image[:, dy:dy + 32, dx:dx + 32]
        crops.append(crop.flip(2) if flip else crop)
    return torch.stack(crops).numpy()


def main(model_name, steps, data_dir, batch, warmup=2):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    images, labels = read_cifar10(data_dir, train=True)
    model = MODELS[model_name]()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.randperm(len(labels), generator=generator).numpy()
    for step in range(steps + warmup):
        if step == warmup:
            start, start_cpu = time.perf_counter(), time.process_time()
        first = (step * batch) % (len(labels) - batch + 1)
        index = order[first:first + batch]
        x = normalize(augment(images[index], generator))
        y = torch.from_numpy(labels[index])
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"samples/s {steps * batch / elapsed:.1f} peak_rss_mib {rss:.0f} cpu_samples/s {steps * batch / cpu:.1f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), *(int(a) for a in sys.argv[5:6]))
