"""Checkpoints exchange with PyTorch in both directions (run by test_torch_exchange.sh).

Usage: torch_exchange.py SYNCGRAD_TRAIN DATA_DIR WORK_DIR
1. syncgrad -> PyTorch: weights that syncgrad-train saved load strictly into the equivalent PyTorch models, and
   the MLP's test accuracy computed by PyTorch equals the one syncgrad-train printed.
2. PyTorch -> syncgrad: weights PyTorch saved with safetensors load with --init-from, and syncgrad's test
   accuracy of those weights (learning rate 0) equals PyTorch's.
Prints one line per check and exits 1 on any failure.
"""
import gzip
import os
import re
import subprocess
import sys

import numpy as np
import torch
from torch import nn

MEAN, STD = 0.2860, 0.3530


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 256), nn.Linear(256, 256), nn.Linear(256, 10)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1, self.fc2 = nn.Linear(3136, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def read_idx(path):
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def test_set(data_dir):
    def find(name):
        for candidate in (name + ".gz", name):
            if os.path.exists(os.path.join(data_dir, candidate)):
                return os.path.join(data_dir, candidate)
        raise SystemExit(f"missing {name} in {data_dir}")
    images = read_idx(find("t10k-images-idx3-ubyte")).astype(np.float32) / 255.0
    labels = read_idx(find("t10k-labels-idx1-ubyte")).astype(np.int64)
    x = torch.from_numpy((images - MEAN) / STD).unsqueeze(1)
    return x, torch.from_numpy(labels)


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def run_train(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"syncgrad-train {' '.join(args)} failed:\n{out.stderr}")
    match = re.search(r"test accuracy ([0-9.]+)%", out.stdout)
    return float(match.group(1)) / 100.0


def main(binary, data_dir, work):
    from safetensors.torch import load_file, save_file  # only this cross-check needs safetensors

    torch.manual_seed(0)
    x, y = test_set(data_dir)
    failures = 0

    def check(what, ok, detail=""):
        nonlocal failures
        print(("ok: " if ok else "FAILED: ") + what + (f" ({detail})" if detail else ""))
        failures += 0 if ok else 1

    # syncgrad -> PyTorch
    ours = run_train(binary, "--model", "mlp", "--max-steps", "100", "--checkpoint-dir", f"{work}/mlp")
    mlp = MLP()
    mlp.load_state_dict(load_file(f"{work}/mlp/latest/model.safetensors"), strict=True)
    theirs = accuracy(mlp, x, y)
    check("MLP trained by syncgrad scores the same in PyTorch", abs(ours - theirs) <= 2e-4,
          f"syncgrad {ours:.4f}, PyTorch {theirs:.4f}")
    run_train(binary, "--model", "cnn", "--max-steps", "3", "--checkpoint-dir", f"{work}/cnn")
    cnn = CNN()
    cnn.load_state_dict(load_file(f"{work}/cnn/latest/model.safetensors"), strict=True)
    check("CNN weights saved by syncgrad load strictly in PyTorch", True)

    # PyTorch -> syncgrad
    mlp = MLP()
    optimizer = torch.optim.SGD(mlp.parameters(), lr=0.05, momentum=0.9)
    for i in range(60):
        batch = slice(64 * i, 64 * (i + 1))
        loss = nn.functional.cross_entropy(mlp(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    save_file({k: v.contiguous() for k, v in mlp.state_dict().items()}, f"{work}/torch-mlp.safetensors")
    theirs = accuracy(mlp, x, y)
    ours = run_train(binary, "--model", "mlp", "--init-from", f"{work}/torch-mlp.safetensors", "--lr", "0",
                     "--momentum", "0", "--max-steps", "1")
    check("MLP trained by PyTorch scores the same in syncgrad", abs(ours - theirs) <= 2e-4,
          f"PyTorch {theirs:.4f}, syncgrad {ours:.4f}")
    save_file({k: v.contiguous() for k, v in CNN().state_dict().items()}, f"{work}/torch-cnn.safetensors")
    run_train(binary, "--model", "cnn", "--init-from", f"{work}/torch-cnn.safetensors", "--lr", "0",
              "--max-steps", "1")
    check("CNN weights saved by PyTorch load with --init-from", True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
