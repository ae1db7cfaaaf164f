"""PyTorch side of bench/resnet_vs_pytorch.sh and bench/gpu_models_vs_pytorch.sh: trains the same ResNet as
`syncgrad-train --model resnetNN --dataset cifar10` (tests/train/torch_resnet_model.py) with the same settings:
CIFAR-10 binary batches, random crop with padding 4, horizontal flip, per-channel normalisation (done per batch
on the host in this thread, as syncgrad-train --workers 0 does), SGD lr 0.05 momentum 0.9. Times STEPS steps
after WARMUP steps and prints 'samples/s N peak_rss_mib M cpu_samples/s C' (C: per second of CPU time, robust
to a loaded machine; on cuda followed by 'peak_device_mib D'). With --amp bf16 the forward and the loss run under
bfloat16 autocast (torch.autocast; on the CPU oneDNN's bf16 convolutions and GEMMs).
--device cpu (default): OMP_NUM_THREADS threads (1 unless set). --device cuda: see torch_device.py (the host batch is copied to the device,
whose asynchronous work overlaps the next batch's augmentation).
Not a dependency of syncgrad; a reference peer for benchmarks.
Usage: torch_resnet.py resnet18|resnet20 STEPS DATA_DIR BATCH [WARMUP=2] [--device cpu|cuda] [--amp off|bf16]
"""
import argparse
import os
import resource
import sys

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_device import finish_timing, prepare_device, start_timing, to_device  # noqa: E402
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


def main(args):
    device = prepare_device(args.device)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    images, labels = read_cifar10(args.data_dir, train=True)
    model = MODELS[args.model]().to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = torch.randperm(len(labels), generator=generator).numpy()
    batch = args.batch
    for step in range(args.steps + args.warmup):
        if step == args.warmup:
            start = start_timing(device)
        first = (step * batch) % (len(labels) - batch + 1)
        index = order[first:first + batch]
        x = to_device(normalize(augment(images[index], generator)), device)  # (B, 3, 32, 32)
        y = to_device(torch.from_numpy(labels[index]), device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp == "bf16"):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    elapsed, cpu, memory = finish_timing(device, start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"samples/s {args.steps * batch / elapsed:.1f} peak_rss_mib {rss:.0f} "
          f"cpu_samples/s {args.steps * batch / cpu:.1f}{memory}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="PyTorch peer of syncgrad-train --model resnet18|resnet20")
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("steps", type=int, help="timed steps")
    parser.add_argument("data_dir", help="CIFAR-10 binary batches")
    parser.add_argument("batch", type=int)
    parser.add_argument("warmup", type=int, nargs="?", default=2, help="untimed steps first")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--amp", choices=("off", "bf16"), default="off")
    main(parser.parse_args())
