"""Starts `world` local processes for a PyTorch benchmark (Debian's torch.distributed.run fails on Python 3.11 with
"'NoneType' object has no attribute 'get'"): sets MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE and calls fn(*args)."""
import os
import socket

import torch.multiprocessing as mp


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(rank, world, port, fn, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    fn(*args)


def spawn(world, fn, *args):
    mp.spawn(_run, args=(world, _free_port(), fn, args), nprocs=world, join=True)
