"""PyTorch side of bench/zero_vs_pytorch.sh: bench/torch_gpt.py's GPT trained with AdamW under
DistributedDataParallel over gloo, either with a plain AdamW (ddp) or with torch.distributed.optim's
ZeroRedundancyOptimizer around AdamW (zero1; PyTorch has no ZeRO-2 for DDP: that is FSDP's SHARD_GRAD_OP, not
measured here), on random tokens, one thread per rank. After WARMUP steps it times STEPS steps; rank 0 prints
'step_ms M peak_rss_mib R optimizer_state_mib S' (median step time, its peak RSS, and the bytes of the optimizer
state it holds). With --checkpointing every block runs under torch.utils.checkpoint.
Usage: torch_zero.py ddp|zero1 WORLD STEPS BATCH MODEL_CONFIG [--warmup 3] [--checkpointing]
"""
import argparse
import os
import resource
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, os.path.dirname(__file__))
from torch_gpt import GPT, parse_config  # noqa: E402
from torch_spawn import spawn  # noqa: E402


def forward(model, tokens, checkpointing):
    if not checkpointing:
        return model(tokens)
    gpt = model.module
    t = tokens.size(1)
    x = gpt.transformer.wte(tokens) + gpt.transformer.wpe(torch.arange(t))
    for block in gpt.transformer.h:
        x = checkpoint(block, x, use_reentrant=False)
    return gpt.lm_head(gpt.transformer.ln_f(x))


def state_bytes(optimizer):
    inner = optimizer.optim if isinstance(optimizer, ZeroRedundancyOptimizer) else optimizer
    return sum(v.numel() * v.element_size() for s in inner.state.values() for v in s.values()
               if torch.is_tensor(v) and v.dim() > 0)


def main(mode, steps, batch, config_text, warmup, checkpointing):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    config = parse_config(config_text)
    model = DistributedDataParallel(GPT(config))
    if mode == "zero1":
        optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-4)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    block = config["block_size"]
    gen = torch.Generator().manual_seed(rank)
    times = []
    for step in range(warmup + steps):
        tokens = torch.randint(0, config["vocab_size"], (batch, block + 1), generator=gen)
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        logits = forward(model, tokens[:, :-1], checkpointing)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if rank == 0:
        print(f"step_ms {1000 * statistics.median(times):.0f} peak_rss_mib {rss_mib:.0f} "
              f"optimizer_state_mib {state_bytes(optimizer) / 1048576:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["ddp", "zero1"])
    parser.add_argument("world", type=int)
    parser.add_argument("steps", type=int)
    parser.add_argument("batch", type=int)
    parser.add_argument("config")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--checkpointing", action="store_true")
    a = parser.parse_args()
    spawn(a.world, main, a.mode, a.steps, a.batch, a.config, a.warmup, a.checkpointing)
