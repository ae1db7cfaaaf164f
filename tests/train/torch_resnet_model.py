"""PyTorch definitions of syncgrad's models::ResNet (models/resnet.h), with the same parameter and buffer names
(torchvision's), shared by the logits/checkpoint cross-check (tests/train/test_resnet_torch.sh) and the benchmark
(bench/torch_resnet.py). Also the CIFAR-10 binary reader and the per-channel normalisation the trainer uses.
"""
import os

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def conv(cin, cout, kernel, stride):
    layer = nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)
    nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
    return layer


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride, shortcut):
        super().__init__()
        self.conv1, self.bn1 = conv(in_planes, planes, 3, stride), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = conv(planes, planes, 3, 1), nn.BatchNorm2d(planes)
        self.reshapes = stride != 1 or in_planes != planes
        self.pad = (planes - in_planes) // 2
        self.stride = stride
        if self.reshapes and shortcut == "projection":
            self.downsample = nn.Sequential(conv(in_planes, planes, 1, stride), nn.BatchNorm2d(planes))
        else:
            self.downsample = None

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        elif self.reshapes:  # option A: subsample, zero channels on both sides
            identity = F.pad(x[:, :, ::self.stride, ::self.stride], (0, 0, 0, 0, self.pad, self.pad))
        else:
            identity = x
        return F.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, widths, blocks, shortcut, num_classes=10):
        super().__init__()
        self.conv1, self.bn1 = conv(3, widths[0], 3, 1), nn.BatchNorm2d(widths[0])
        in_planes = widths[0]
        for stage, (width, count) in enumerate(zip(widths, blocks)):
            layer = []
            for b in range(count):
                layer.append(BasicBlock(in_planes, width, 2 if stage > 0 and b == 0 else 1, shortcut))
                in_planes = width
            setattr(self, f"layer{stage + 1}", nn.Sequential(*layer))
        self.stages = len(widths)
        self.fc = nn.Linear(in_planes, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for stage in range(self.stages):
            x = getattr(self, f"layer{stage + 1}")(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet18():
    return ResNet([64, 128, 256, 512], [2, 2, 2, 2], "projection")


def resnet20():
    return ResNet([16, 32, 64], [3, 3, 3], "zero_pad")


MODELS = {"resnet18": resnet18, "resnet20": resnet20}


def read_cifar10(data_dir, train):
    """(images (N, 3, 32, 32) uint8, labels (N) int64) from the binary batches."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
    records = np.concatenate([np.fromfile(os.path.join(data_dir, n), dtype=np.uint8).reshape(-1, 3073)
                              for n in names])
    return records[:, 1:].reshape(-1, 3, 32, 32), records[:, 0].astype(np.int64)


def normalize(images_u8):
    """uint8 (N, 3, 32, 32) -> float32 scaled to [0, 1] and normalised per channel."""
    x = torch.from_numpy(images_u8).float() / 255.0
    mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)
    return (x - mean) / std
