"""PyTorch side of syncgrad-bench cuda's CNN table: the LeNet-style CNN of models::CNN (tests/train/torch_exchange.py)
trained on one CUDA device with SGD (lr 0.05, momentum 0.9) on a fixed random batch, and the median time of a
training step printed as 'ms_per_step X' (or 'unavailable: <why>' when torch has no CUDA device). The float32
convolutions follow --tf32 (off by default, as syncgrad's; PyTorch's own default for cuDNN is on).
Not a dependency of syncgrad; a reference peer for the benchmark.
Usage: torch_cuda_cnn.py [--steps N] [--batch N] [--tf32]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--tf32", action="store_true")
    args = parser.parse_args()
    try:
        import torch
        from torch import nn
        from torch_exchange import CNN
    except ImportError as e:
        print(f"unavailable: {e}")
        return
    if not torch.cuda.is_available():
        print("unavailable: torch.cuda.is_available() is False")
        return
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.manual_seed(0)
    device = torch.device("cuda", 0)
    model = CNN().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(args.batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        loss.item()
        times.append((time.perf_counter() - start) / args.steps)
    times.sort()
    print(f"ms_per_step {1000 * times[len(times) // 2]:.3f}")


if __name__ == "__main__":
    main()
