#!/usr/bin/env python3
"""Records a PyTorch profiler (Kineto) trace of training steps of a small
GPT-like model (--model gpt) or a DLRM-style recommender (--model dlrm), for
`clustertwin trace import-kineto` to ingest.

--model dlrm: embedding tables on the device (EmbeddingBag, sum pooling), a
bottom and a top MLP, dot interactions, fused Adam (one multi_tensor_apply
kernel per group), and no synchronisation at the end of a step (--no-sync is
its default): the device's queue carries across the profiler's step markers,
the device runs after the host has moved on, as a training loop that never
calls .item() does. Its backward sorts the ids (radix sort) and scatters the
row gradients, the kernels a DLRM step spends its device time in.

Runs alone, or once per GPU under torchrun (`python3 -m torch.distributed.run`),
which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; then the
model is wrapped in DistributedDataParallel, so the trace holds the gradient
all-reduces (NCCL kernels) and distributedInfo too. Only rank 0 writes its
trace, `<out-dir>/gpt_step.rank0.json.gz`, to keep the files few.

Profiler schedule: one step skipped (cuBLAS and allocator set-up), one warm-up
step, then `--steps` recorded steps; record_shapes on. The trace is checked
after writing: it must hold GPU kernels (category "kernel") when run on a GPU,
or the script fails. `--device cpu` tries it where there is no GPU.
"""

import argparse
import collections
import gzip
import json
import math
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", required=True, help="folder for gpt_step.rank0.json.gz")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=2, help="recorded steps (default 2)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--model", choices=["gpt", "dlrm"], default="gpt")
    parser.add_argument("--tables", type=int, default=8, help="dlrm: embedding tables")
    parser.add_argument("--rows", type=int, default=1000000, help="dlrm: rows per table")
    parser.add_argument("--dim", type=int, default=128, help="dlrm: embedding dimension")
    parser.add_argument("--pooling", type=int, default=20, help="dlrm: ids per sample and table")
    parser.add_argument("--sync", choices=["step", "none"], default=None,
                        help="torch.cuda.synchronize() before each profiler step (gpt's default) or never (dlrm's)")
    parser.add_argument("--name", default=None, help="the trace's file name stem (default: MODEL_step)")
    args = parser.parse_args()
    if args.sync is None:
        args.sync = "step" if args.model == "gpt" else "none"
    if args.name is None:
        args.name = f"{args.model}_step"
    for name in ("layers", "d_model", "heads", "seq", "batch", "vocab", "steps", "tables", "rows", "dim", "pooling"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: must be positive")
    if args.d_model % args.heads:
        parser.error(f"--d-model {args.d_model} is not a multiple of --heads {args.heads}")
    return args


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0: fused (flash) attention
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            y = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.tok = nn.Embedding(args.vocab, args.d_model)
        self.pos = nn.Embedding(args.seq, args.d_model)
        self.blocks = nn.Sequential(*[Block(args.d_model, args.heads) for _ in range(args.layers)])
        self.ln_f = nn.LayerNorm(args.d_model)
        self.head = nn.Linear(args.d_model, args.vocab, bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.ln_f(self.blocks(self.tok(idx) + self.pos(positions))))


class TinyDLRM(nn.Module):
    """DLRM's shape (Naumov et al. 2019): dense features through a bottom MLP, each sparse feature through an
    embedding table (sum of its ids' rows), pairwise dot products, a top MLP to one logit."""

    def __init__(self, args, dense_features=13):
        super().__init__()
        d = args.dim
        self.tables = nn.ModuleList(nn.EmbeddingBag(args.rows, d, mode="sum") for _ in range(args.tables))
        self.bottom = nn.Sequential(nn.Linear(dense_features, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                    nn.Linear(256, d), nn.ReLU())
        features = args.tables + 1
        self.top = nn.Sequential(nn.Linear(d + features * (features - 1) // 2, 1024), nn.ReLU(),
                                 nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 1))

    def forward(self, dense, ids, offsets):
        x = self.bottom(dense)
        pooled = [table(ids[t], offsets) for t, table in enumerate(self.tables)]
        z = torch.stack([x] + pooled, dim=1)
        dots = torch.bmm(z, z.transpose(1, 2))
        i, j = torch.triu_indices(z.shape[1], z.shape[1], offset=1, device=z.device)
        return self.top(torch.cat([x, dots[:, i, j]], dim=1)).squeeze(1)


def summary_table(prof, on_gpu):
    averages = prof.key_averages()
    keys = ["self_device_time_total", "self_cuda_time_total"] if on_gpu else ["self_cpu_time_total"]
    for key in keys:  # torch 2.4 renamed cuda to device
        try:
            return averages.table(sort_by=key, row_limit=15)
        except (AttributeError, KeyError, ValueError):
            continue
    return averages.table(row_limit=15)


def check_trace(path, on_gpu):
    """Prints what the trace holds; returns why it is unusable, or None."""
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    # Kineto writes {"traceEvents": [...], ...}; a torch built without Kineto writes the bare list.
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    cats = collections.Counter(e.get("cat", "?") for e in events)
    print(f"trace {path}: {len(events)} events, {os.path.getsize(path)} bytes gzipped; by category: "
          + ", ".join(f"{k} {v}" for k, v in cats.most_common()))
    if isinstance(trace, dict) and "distributedInfo" in trace:
        print(f"distributedInfo: {trace['distributedInfo']}")
    nccl = sum(1 for e in events if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower())
    print(f"NCCL kernels: {nccl}")
    if not events:
        return "the trace holds no events"
    if on_gpu and cats.get("kernel", 0) == 0:
        return "the trace holds no GPU kernels (category 'kernel'): CUPTI recorded nothing"
    return None


def main():
    args = parse_args()
    distributed = "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    on_gpu = args.device == "cuda"
    if on_gpu:
        if not torch.cuda.is_available():
            sys.exit("kineto_step.py: torch sees no CUDA device (use --device cpu to try the script without one)")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    if distributed:
        dist.init_process_group(backend="nccl" if on_gpu else "gloo")

    torch.manual_seed(0)  # the same weights on every rank, as DDP expects
    model = (TinyGPT(args) if args.model == "gpt" else TinyDLRM(args)).to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if on_gpu else None)
    if args.model == "gpt":
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:  # fused: one multi_tensor_apply kernel per parameter group (torch >= 2.0 on CUDA)
        try:
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=on_gpu)
        except (TypeError, RuntimeError):
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator(device="cpu").manual_seed(100 + rank)
    params = sum(p.numel() for p in model.parameters())
    if rank == 0 and args.model == "gpt":
        print(f"TinyGPT: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, seq {args.seq}, "
              f"batch {args.batch}, vocab {args.vocab}: {params / 1e6:.1f} M parameters on {device}", flush=True)
    elif rank == 0:
        print(f"TinyDLRM: {args.tables} tables of {args.rows} x {args.dim}, {args.pooling} ids per sample and table, "
              f"batch {args.batch}: {params / 1e6:.1f} M parameters on {device}", flush=True)

    def backward_and_update(loss):
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss

    def dlrm_step():
        dense = torch.rand(args.batch, 13, generator=generator).to(device, non_blocking=True)
        ids = torch.randint(args.rows, (args.tables, args.batch * args.pooling), generator=generator).to(
            device, non_blocking=True)
        offsets = torch.arange(0, args.batch * args.pooling, args.pooling, device=device)
        labels = torch.randint(2, (args.batch,), generator=generator).float().to(device, non_blocking=True)
        with record_function("forward"):
            loss = F.binary_cross_entropy_with_logits(model(dense, ids, offsets), labels)
        return backward_and_update(loss)

    def train_step():
        if args.model == "dlrm":
            return dlrm_step()
        tokens = torch.randint(args.vocab, (args.batch, args.seq + 1), generator=generator).to(device)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=on_gpu):
            with record_function("forward"):
                logits = model(inputs)
                loss = F.cross_entropy(logits.reshape(-1, args.vocab).float(), targets.reshape(-1))
        return backward_and_update(loss)

    tmp_dir = tempfile.mkdtemp(prefix="kineto_step_")
    raw_path = os.path.join(tmp_dir, "trace.json")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    recorded = []

    def on_trace_ready(prof):
        if rank == 0:
            prof.export_chrome_trace(raw_path)
            recorded.append(prof)

    wait, warmup = 1, 1
    with profile(activities=activities, schedule=schedule(wait=wait, warmup=warmup, active=args.steps, repeat=1),
                 record_shapes=True, on_trace_ready=on_trace_ready) as prof:
        for step in range(wait + warmup + args.steps):
            loss = train_step()
            if on_gpu and args.sync == "step":
                torch.cuda.synchronize()
            prof.step()
            if rank == 0 and args.sync == "step":
                print(f"step {step}: loss {loss.item():.4f}", flush=True)
        if on_gpu:
            torch.cuda.synchronize()  # after the profiled steps: the device's queue drained into the trace
        if rank == 0:
            print(f"{wait + warmup + args.steps} steps, last loss {loss.item():.4f}", flush=True)

    status = 0
    if rank == 0:
        if not recorded:
            print("kineto_step.py: the profiler produced no trace", file=sys.stderr)
            status = 1
        else:
            print(summary_table(recorded[0], on_gpu), flush=True)
            os.makedirs(args.out_dir, exist_ok=True)
            out_path = os.path.join(args.out_dir, f"{args.name}.rank0.json.gz")
            with open(raw_path, "rb") as src, gzip.open(out_path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            problem = check_trace(out_path, on_gpu)
            if problem:
                print(f"kineto_step.py: {out_path}: {problem}", file=sys.stderr)
                status = 1
    shutil.rmtree(tmp_dir, ignore_errors=True)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
