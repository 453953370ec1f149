#!/usr/bin/env python3
"""Times GEMMs and attention on one GPU and writes a kernel-benchmark trace
(traces/KERNELS.md) that `clustertwin calibrate device` fits into a device
profile (calibrators/device_fit.h).

What it measures, forward + backward in bf16 under PyTorch eager (no
Transformer Engine, no torch.compile; TF32 allowed), each as 3 untimed calls
then the mean of --iters timed calls between CUDA events, the method of
../shared/measurements/h200-kernel-costs-2026-12-04.md:
- GEMMs: the FlowTrain models' shapes (72B backbone at TP 8, 4 and 2;
  InternViT-6B at TP 1) at 16384 and 8192 tokens, and smaller token counts,
  so that the fitted curve spans the twins' sizes; FLOPs 6 T K N.
- attention: `scaled_dot_product_attention`, causal, 8 query heads sharing 1
  KV head, head dim 128, 16384 tokens per call at sequence lengths
  1024..16384 (FLOPs 3 x 2 b h s^2 d); and full attention at the ViT's 1025
  tokens, 25 heads (3 x 4 b h s^2 d).
Times only: efficiencies are derived by the fitter. The output is written
atomically (a temporary file, then a rename). A time budget (--budget-s)
stops before the next shape once spent, so the step never runs past its
limit with nothing written; a run that measured nothing exits 1.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

# Dense bf16 peaks (FLOP/s) by device name, from NVIDIA's datasheets (H100 SXM: 1,979 TFLOP/s with sparsity, / 2;
# the H200 has the same compute); other devices need --peak-flops.
PEAKS = {"H100": 989.5e12, "H200": 989.5e12}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the trace to write (JSON)")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--budget-s", type=float, default=60)
    p.add_argument("--peak-flops", type=float, default=0, help="dense bf16 peak; default: by the device's name")
    return p.parse_args()


def timed(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def gemm_case(t, k, n):
    x = torch.randn(t, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(t, n, device="cuda", dtype=torch.bfloat16)

    def step():
        y = F.linear(x, w)
        y.backward(g)  # dX = g W and dW = g^T X: 3 GEMMs of 2 T K N in all

    return step


def attention_case(s, b, h, kv, d, causal):
    q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, kv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)

    def step():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kv != h)
        o.backward(g)

    return step


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def main():
    a = parse_args()
    if not torch.cuda.is_available():
        sys.exit("kernel_bench.py: torch sees no CUDA device")
    name = torch.cuda.get_device_name(0)
    peak = a.peak_flops or next((v for key, v in PEAKS.items() if key in name), 0)
    if not peak:
        sys.exit(f"kernel_bench.py: no known bf16 peak for '{name}'; pass --peak-flops")
    torch.backends.cuda.matmul.allow_tf32 = True
    started = time.monotonic()
    records = []

    gemms = []
    for t in (16384, 8192, 2048):
        for tp in (8, 4, 2):  # 72B (hidden 8192, 64 heads + 2 x 8 KV heads of 128, SwiGLU 29568) at TP tp
            gemms += [(f"72B TP {tp}: QKV", t, 8192, (64 + 16) * 128 // tp),
                      (f"72B TP {tp}: attention output projection", t, 64 * 128 // tp, 8192),
                      (f"72B TP {tp}: SwiGLU gate + up", t, 8192, 2 * 29568 // tp),
                      (f"72B TP {tp}: down projection", t, 29568 // tp, 8192)]
    for t in (8192, 1024):  # InternViT-6B at TP 1: 8 images of 1024 tokens, and one
        gemms += [("6B ViT: QKV", t, 3200, 9600), ("6B ViT: output projection", t, 3200, 3200),
                  ("6B ViT: MLP up", t, 3200, 12800), ("6B ViT: MLP down", t, 12800, 3200)]
    attentions = [(s, 16384 // s, 8, 1, 128, True) for s in (1024, 2048, 4096, 8192, 16384)]
    attentions.append((1025, 8, 25, 25, 128, False))  # the ViT's full attention, 8 images

    def out_of_time():
        return time.monotonic() - started > a.budget_s

    for label, t, k, n in gemms:
        if out_of_time():
            break
        seconds = timed(gemm_case(t, k, n), a.iters)
        records.append({"kind": "gemm", "name": label, "dtype": "bf16", "pass": "forward+backward",
                        "shape": {"tokens": t, "in": k, "out": n}, "flops": 6 * t * k * n,
                        "time_s": round(seconds, 9), "iterations": a.iters})
        print(f"gemm {t} x {k} -> {n}: {seconds * 1e3:.3f} ms, {6 * t * k * n / seconds / peak:.3f} of peak")
        torch.cuda.empty_cache()
    for s, b, h, kv, d, causal in attentions:
        if out_of_time():
            break
        seconds = timed(attention_case(s, b, h, kv, d, causal), a.iters)
        flops = 3 * 4 * b * h * s * s * d // (2 if causal else 1)
        records.append({"kind": "attention", "name": "scaled_dot_product_attention" + (", causal" if causal else ""),
                        "dtype": "bf16", "pass": "forward+backward",
                        "shape": {"seq_len": s, "batch": b, "heads": h, "kv_heads": kv, "head_dim": d,
                                  "causal": causal},
                        "flops": flops, "time_s": round(seconds, 9), "iterations": a.iters})
        print(f"attention s {s} x b {b} ({'causal' if causal else 'full'}): {seconds * 1e3:.3f} ms, "
              f"{flops / seconds / peak:.3f} of peak")
        torch.cuda.empty_cache()
    if not records:
        sys.exit("kernel_bench.py: the budget was spent before the first kernel")
    doc = {
        "format": "clustertwin-kernel-benchmark", "version": 1,
        "provenance": {
            "device": name, "driver": driver_version(), "torch": torch.__version__,
            "cuda": str(torch.version.cuda),
            "software_stack": f"torch {torch.__version__} eager, bf16, TF32 allowed; "
                              "no Transformer Engine, no torch.compile",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "method": f"3 untimed calls, then the mean of {a.iters} timed calls between CUDA events "
                      "(scripts/device-check/kernel_bench.py)",
            "peak": f"{peak / 1e12:.1f} TFLOP/s dense bf16"},
        "peak_flops": peak, "records": records}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)
    gemm_n = sum(r["kind"] == "gemm" for r in records)
    print(f"NOTE: {len(records)} kernels ({gemm_n} GEMMs, {len(records) - gemm_n} attention) in "
          f"{time.monotonic() - started:.0f} s on {name} -> kernels.json")


if __name__ == "__main__":
    main()
