#!/usr/bin/env python3
"""All-reduce and all-to-all bus bandwidth through torch.distributed, reported
with nccl-tests' columns (size, count, type, redop, time, algbw, busbw, #wrong).

Started once per GPU by torchrun (or `python3 -m torch.distributed.run`), which
sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT:

    python3 -m torch.distributed.run --standalone --nproc_per_node=8 nccl_bench.py --out nccl.json

How it times, as nccl-tests does: per size and operation, `--warmup` untimed
calls, then `--iters` calls between two CUDA events; the time is their mean,
then the mean over ranks. algbw = bytes / time; busbw = algbw x 2(n-1)/n for
all-reduce and x (n-1)/n for all-to-all, the factors that make busbw comparable
with link bandwidth whatever n is (so with one GPU busbw is 0 by definition).
Before timing, one call on known values checks the result (#wrong = elements
that differ). `--device cpu` runs the same over Gloo, to try the script where
there is no GPU; its figures mean nothing.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist

MIB = 1 << 20


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON results (written by rank 0)")
    parser.add_argument("--min-bytes", type=int, default=MIB, help="smallest size (default 1 MiB)")
    parser.add_argument("--max-bytes", type=int, default=1 << 30, help="largest size (default 1 GiB)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls per size (default 5)")
    parser.add_argument("--iters", type=int, default=20, help="timed calls per size (default 20)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cuda: NCCL (default); cpu: Gloo")
    args = parser.parse_args()
    if args.min_bytes <= 0 or args.max_bytes < args.min_bytes:
        parser.error(f"--min-bytes {args.min_bytes} / --max-bytes {args.max_bytes}: need 0 < min <= max")
    if args.warmup < 0 or args.iters <= 0:
        parser.error(f"--warmup {args.warmup} / --iters {args.iters}: need warmup >= 0 and iters > 0")
    return args


def sizes(min_bytes, max_bytes):
    size = min_bytes
    while size <= max_bytes:
        yield size
        size *= 2


class Timer:
    """CUDA events on the GPU, the host clock (after the collectives) on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def __enter__(self):
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.stop = torch.cuda.Event(enable_timing=True)
            self.start.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.stop.record()
            self.stop.synchronize()
            self.ms = self.start.elapsed_time(self.stop)
        else:
            self.ms = (time.perf_counter() - self.t0) * 1e3


def check_all_reduce(buf, rank, n):
    # Rank r contributes r + 1 everywhere: every element of the sum is n(n+1)/2.
    buf.fill_(rank + 1)
    dist.all_reduce(buf)
    return int((buf != n * (n + 1) / 2).sum().item())


def check_all_to_all(inp, out, rank, n):
    # Chunk j of rank r holds r * n + j; after the exchange, chunk j of rank r
    # holds what rank j sent to r: j * n + r.
    chunk = inp.numel() // n
    for j in range(n):
        inp[j * chunk:(j + 1) * chunk].fill_(rank * n + j)
    dist.all_to_all_single(out, inp)
    wrong = 0
    for j in range(n):
        wrong += int((out[j * chunk:(j + 1) * chunk] != j * n + rank).sum().item())
    return wrong


def measure(op, size, args, device, rank, n):
    """One row of the table for `op` at `size` bytes, the same on every rank."""
    count = size // 4  # float32 elements
    if op == "all_to_all":
        count -= count % n  # equal chunks
    inp = torch.empty(count, dtype=torch.float32, device=device)
    if op == "all_reduce":
        wrong = check_all_reduce(inp, rank, n)
        inp.uniform_()  # timed on random data, not zeros

        def call():
            dist.all_reduce(inp)

        factor = 2 * (n - 1) / n
    else:
        out = torch.empty_like(inp)
        wrong = check_all_to_all(inp, out, rank, n)
        inp.uniform_()

        def call():
            dist.all_to_all_single(out, inp)

        factor = (n - 1) / n

    for _ in range(args.warmup):
        call()
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    with Timer(device) as timer:
        for _ in range(args.iters):
            call()
    # Mean over iterations, then over ranks; #wrong summed over ranks.
    stats = torch.tensor([timer.ms / args.iters, float(wrong)], dtype=torch.float64, device=device)
    dist.all_reduce(stats)
    time_us = stats[0].item() / n * 1e3
    nbytes = count * 4
    algbw = nbytes / (time_us * 1e-6) / 1e9 if time_us > 0 else 0.0
    return {
        "op": op,
        "size_bytes": nbytes,
        "count": count,
        "type": "float",
        "redop": "sum" if op == "all_reduce" else "none",
        "time_us": round(time_us, 2),
        "algbw_GBps": round(algbw, 3),
        "busbw_GBps": round(algbw * factor, 3),
        "wrong": int(stats[1].item()),
    }


def topology():
    try:
        done = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30)
        return done.stdout if done.returncode == 0 else f"nvidia-smi topo -m failed ({done.returncode}): {done.stderr}"
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvidia-smi topo -m could not run: {e}"


def main():
    args = parse_args()
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            sys.exit(f"nccl_bench.py: {var} is not set; start it with torchrun or python3 -m torch.distributed.run")
    rank = int(os.environ["RANK"])
    n = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("nccl_bench.py: torch sees no CUDA device (use --device cpu to try the script without one)")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    if backend == "nccl":
        try:  # torch >= 2.3: binds the communicator to this GPU up front (no guessing in barrier())
            dist.init_process_group(backend=backend, device_id=device)
        except TypeError:
            dist.init_process_group(backend=backend)
    else:
        dist.init_process_group(backend=backend)
    torch.manual_seed(1234 + rank)

    rows = []
    header = f"{'op':>10} {'size(B)':>12} {'count':>11} {'type':>6} {'redop':>6} {'time(us)':>10} " \
             f"{'algbw(GB/s)':>12} {'busbw(GB/s)':>12} {'#wrong':>7}"
    if rank == 0:
        print(f"# {backend}, world size {n}, warm-up {args.warmup}, {args.iters} timed iterations per size", flush=True)
        print(header, flush=True)
    for op in ("all_reduce", "all_to_all"):
        for size in sizes(args.min_bytes, args.max_bytes):
            row = measure(op, size, args, device, rank, n)
            rows.append(row)
            if rank == 0:
                print(f"{row['op']:>10} {row['size_bytes']:>12} {row['count']:>11} {row['type']:>6} "
                      f"{row['redop']:>6} {row['time_us']:>10.1f} {row['algbw_GBps']:>12.2f} "
                      f"{row['busbw_GBps']:>12.2f} {row['wrong']:>7}", flush=True)

    if rank == 0:
        wrong = sum(r["wrong"] for r in rows)
        result = {
            "tool": "scripts/device-check/nccl_bench.py",
            "host": socket.gethostname(),
            "backend": backend,
            "world_size": n,
            "torch": torch.__version__,
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if backend == "nccl" else None,
            "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if backend == "nccl" else [],
            "topology": topology(),
            "warmup_iters": args.warmup,
            "timed_iters": args.iters,
            "time": "mean over timed iterations, then mean over ranks",
            "busbw_factor": {"all_reduce": "2(n-1)/n", "all_to_all": "(n-1)/n"},
            "note": "world size 1: busbw is 0 by definition and algbw measures a local copy" if n == 1 else "",
            "wrong_total": wrong,
            "results": rows,
        }
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"# wrote {args.out}; #wrong in all: {wrong}", flush=True)
        if wrong:
            print("nccl_bench.py: some results were wrong", file=sys.stderr)
    dist.barrier()
    dist.destroy_process_group()
    return 1 if rank == 0 and sum(r["wrong"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
