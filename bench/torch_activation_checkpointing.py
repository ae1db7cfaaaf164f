"""PyTorch peer of `syncgrad-bench activation-checkpointing` (bench/activation_checkpointing_vs_pytorch.sh): the
same GPT (bench/torch_gpt.py) trained with AdamW on random tokens, each transformer block but the last (as
syncgrad's GPT does) wrapped in torch.utils.checkpoint.checkpoint (use_reentrant=False, PyTorch's recommendation, or True, the kind syncgrad
builds) or not, in one process or as `world` DDP ranks over Gloo (one thread each). Prints one line per rank
in syncgrad-bench's format.

Memory: PyTorch has no allocator statistics on the CPU, so one step after the warm-up runs under the profiler
with profile_memory=True; the largest "Total Allocated" of its memory events (counted from the profiler's
start) is the step's high-water mark above what was allocated before the forward: the activations and
backward's temporaries, since the gradients are zeroed in place (allocated by the warm-up) and the parameters
and optimizer state exist before. The timed steps run without the profiler; the median is printed, in
wall-clock time and in the thread's CPU time.

Usage: torch_activation_checkpointing.py MODE WORLD MODEL_CONFIG BATCH STEPS WARMUP
         MODE: off | reentrant | nonreentrant
"""
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils.checkpoint import checkpoint

from torch_gpt import GPT, parse_config  # the script's own folder
from torch_spawn import spawn

MiB = 1024.0 * 1024.0


class CheckpointedGPT(GPT):
    def __init__(self, c, use_reentrant):
        super().__init__(c)
        self.use_reentrant = use_reentrant

    def forward(self, tokens):
        t = tokens.size(1)
        pos = torch.arange(t, device=tokens.device)
        x = F.dropout(self.transformer.wte(tokens) + self.transformer.wpe(pos), self.config["dropout"], self.training)
        last = len(self.transformer.h) - 1
        for i, block in enumerate(self.transformer.h):  # all but the last, as syncgrad's GPT does
            x = checkpoint(block, x, use_reentrant=self.use_reentrant) if i < last else block(x)
        return self.lm_head(self.transformer.ln_f(x))


def step_peak_bytes(prof):
    """The high-water mark of the profiled step's allocations above its start."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    totals = [e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"]
    return max([0] + totals)


def run(mode, world, config_text, batch, steps, warmup):
    torch.set_num_threads(1)
    rank = 0
    if world > 1:
        dist.init_process_group("gloo")
        rank = dist.get_rank()
    torch.manual_seed(0)
    c = parse_config(config_text)
    model = GPT(c) if mode == "off" else CheckpointedGPT(c, mode == "reentrant")
    trained = model
    if world > 1:
        # Reentrant checkpointing fires a block's parameter hooks inside a nested backward: static_graph.
        trained = torch.nn.parallel.DistributedDataParallel(model, static_graph=mode == "reentrant")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    gen = torch.Generator().manual_seed(100 + rank)
    t = c["block_size"]

    def step(profiled=False):
        tokens = torch.randint(c["vocab_size"], (batch, t), generator=gen)
        targets = torch.randint(c["vocab_size"], (batch * t,), generator=gen)
        optimizer.zero_grad(set_to_none=False)  # in place: the gradients stay allocated, outside the measure
        start, cpu_start = time.perf_counter(), time.thread_time()
        peak = None
        if profiled:
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                F.cross_entropy(trained(tokens).reshape(batch * t, -1), targets).backward()
            peak = step_peak_bytes(prof)
        else:
            F.cross_entropy(trained(tokens).reshape(batch * t, -1), targets).backward()
        optimizer.step()
        return time.perf_counter() - start, time.thread_time() - cpu_start, peak

    # The first step allocates the gradients; under DDP the second rebuilds the buckets (in its forward).
    for _ in range(max(warmup, 2 if world > 1 else 1)):
        step()
    peak = step(profiled=True)[2]
    timed = [step() for _ in range(steps)]
    print(f"rank {rank} world {world} checkpointing {mode} threads 1 params_mib {param_bytes / MiB:.1f} "
          f"activations_mib {peak / MiB:.1f} ms_per_step {1e3 * statistics.median(t[0] for t in timed):.0f} "
          f"cpu_ms_per_step {1e3 * statistics.median(t[1] for t in timed):.0f}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] not in ("off", "reentrant", "nonreentrant"):
        sys.exit(__doc__)
    mode, world, config_text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    batch, steps, warmup = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if world > 1:
        spawn(world, run, mode, world, config_text, batch, steps, warmup)
    else:
        run(mode, world, config_text, batch, steps, warmup)
