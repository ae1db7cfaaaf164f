"""PyTorch peer of syncgrad's GPT (models/gpt.h): the same decoder-only transformer with the same parameter
names, so safetensors state dicts exchange between the two, and a training loop on the same byte-level text
for bench/gpt_vs_pytorch.sh and bench/gpu_models_vs_pytorch.sh. Written for Debian's torch 1.13 (no fused
attention there: the attention is q k^T, causal mask, softmax, dropout, @ v; syncgrad's CUDA attention is
composed from the same pieces). Not a dependency of syncgrad.

Usage: torch_gpt.py train STEPS TEXT_PATH BATCH MODEL_CONFIG [LR] [--device cpu|cuda] [--warmup 10] [--amp off|bf16]
         trains STEPS timed steps (after the warm-up steps) with AdamW and prints 'tokens/s N loss L' (on cuda
         followed by 'peak_device_mib D'); cpu (default): OMP_NUM_THREADS threads (1 unless set); cuda: see torch_device.py (the batch is
         gathered on the host, as syncgrad-train's loader does, and copied to the device)
       torch_gpt.py logits WEIGHTS.safetensors TOKENS.safetensors MODEL_CONFIG OUT.safetensors
         loads syncgrad's weights and writes the logits for the (B, T) int64 tensor 'tokens'
"""
import argparse
import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

from torch_device import finish_timing, prepare_device, start_timing, to_device  # the script's own folder

DEFAULTS = dict(vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=128, dropout=0.0, bias=True)


def parse_config(text):
    """'n_layer=2,n_embd=64' -> the full config (syncgrad's --model-config format)."""
    config = dict(DEFAULTS)
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, value = (s.strip() for s in pair.split("=", 1))
        if key == "dropout":
            config[key] = float(value)
        elif key == "bias":
            config[key] = value in ("true", "1")
        else:
            config[key] = int(value)
    return config


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (torch 1.13's nn.LayerNorm always has one)."""

    def __init__(self, dim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.n_embd, self.dropout = c["n_head"], c["n_embd"], c["dropout"]
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        size = c["block_size"]
        self.register_buffer("mask", torch.tril(torch.ones(size, size, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        probs = F.dropout(F.softmax(scores, dim=-1), self.dropout, self.training)
        y = (probs @ v).transpose(1, 2).contiguous().view(b, t, c)
        return F.dropout(self.c_proj(y), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])
        self.dropout = c["dropout"]

    def forward(self, x):
        return F.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c["n_embd"], c["bias"])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c["n_embd"], c["bias"])
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=LayerNorm(c["n_embd"], c["bias"]),
        ))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c["n_layer"]))
            elif name.endswith(".weight") and p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith(".bias") and ".ln_" not in name and "ln_f" not in name:
                nn.init.zeros_(p)

    def forward(self, tokens):
        t = tokens.size(1)
        pos = torch.arange(t, device=tokens.device)
        x = F.dropout(self.transformer.wte(tokens) + self.transformer.wpe(pos), self.config["dropout"], self.training)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def read_text(path):
    """syncgrad's text_corpus rules: a file, or a directory's regular files (no symlinks, *.dat, dot files)."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if not n.startswith(".") and not n.endswith(".dat")
                       and os.path.isfile(os.path.join(path, n)) and not os.path.islink(os.path.join(path, n)))
        files = [os.path.join(path, n) for n in names]
    else:
        files = [path]
    return b"".join(open(f, "rb").read() for f in files)


def train(steps, path, batch, config_text, lr=1e-3, device_name="cpu", warmup=10, amp="off"):
    device = prepare_device(device_name)
    torch.manual_seed(0)
    c = parse_config(config_text)
    data = torch.frombuffer(bytearray(read_text(path)), dtype=torch.uint8).long()
    train_tokens = data[: int(0.9 * len(data))]
    block = c["block_size"]
    windows = (len(train_tokens) - 1) // block
    model = GPT(c).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    offsets = torch.arange(block + 1)
    for step in range(steps + warmup):
        if step == warmup:
            start = start_timing(device)
        starts = torch.randint(windows, (batch,)) * block
        chunk = to_device(train_tokens[starts.unsqueeze(1) + offsets], device)  # (B, T + 1)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp == "bf16"):
            logits = model(chunk[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), chunk[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    elapsed, _, memory = finish_timing(device, start)
    print(f"tokens/s {steps * batch * block / elapsed:.0f} loss {loss.item():.4f}{memory}")


def logits(weights, tokens_file, config_text, out):
    from safetensors.torch import load_file, save_file
    model = GPT(parse_config(config_text))
    state = load_file(weights)
    model.load_state_dict(state)
    model.eval()
    with torch.no_grad():
        result = model(load_file(tokens_file)["tokens"])
    save_file({"logits": result.contiguous()}, out)


def parse_train_args(argv):
    parser = argparse.ArgumentParser(prog="torch_gpt.py train")
    parser.add_argument("steps", type=int, help="timed steps")
    parser.add_argument("text", help="a text file or a directory of them")
    parser.add_argument("batch", type=int)
    parser.add_argument("config", help="syncgrad's --model-config text, e.g. n_layer=2,n_embd=64")
    parser.add_argument("lr", type=float, nargs="?", default=1e-3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    parser.add_argument("--amp", choices=("off", "bf16"), default="off",
                        help="bf16: the forward and the loss under torch.autocast with bfloat16")
    return parser.parse_args(argv)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "train":
        a = parse_train_args(sys.argv[2:])
        train(a.steps, a.text, a.batch, a.config, a.lr, a.device, a.warmup, a.amp)
    elif len(sys.argv) > 1 and sys.argv[1] == "logits":
        logits(*sys.argv[2:6])
    else:
        sys.exit(__doc__)
