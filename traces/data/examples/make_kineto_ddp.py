#!/usr/bin/env python3
"""Writes kineto_ddp_rank0.json and kineto_ddp_rank1.json: a synthetic
two-rank data-parallel job in the format PyTorch 2.x's profiler (Kineto)
exports, three profiler steps per rank, for docs/bring-your-own-trace.md.

Not recorded from a run: every time below is chosen. Per step (1,000 us,
from its ProfilerStep marker at S; rank 1 runs 2 us behind rank 0):

  stream 7   forward GEMM       S+5    300 us
             dgrad GEMM         S+305  250 us
             wgrad GEMM         S+555  250 us
             optimizer kernel   S+962   30 us   (after the second all-reduce)
  stream 20  all-reduce 1       S+558  150 us   (after the dgrad GEMM: its bucket)
             all-reduce 2       S+808  150 us   (after the wgrad GEMM)

Both all-reduces carry 6,553,600 BFloat16 elements (13,107,200 bytes) with
the c10d args PyTorch 2.x writes; the all-reduces of the two ranks end
together. The CPU thread has the step markers, the aten operators (with
`flops`, as with_flops=True writes them), record_param_comms and the kernel
launches. Run from this folder: python3 make_kineto_ddp.py
"""

from kineto_fixture import write_trace

BASE_NS = 1_700_000_000_000_000_000
STEP_US = 1000.0
STEPS = (3, 4, 5)  # the ProfilerStep numbers (the profiler's schedule skipped steps 0-2)
NELEMS = 6_553_600


def events_of(rank):
    lag = 2.0 * rank
    ev = [
        {"ph": "M", "name": "process_name", "pid": 4000 + rank, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 4000 + rank, "tid": 4000 + rank, "args": {"name": f"thread {4000 + rank} (python3)"}},
        {"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"GPU {rank}"}},
    ]
    cpu = {"pid": 4000 + rank, "tid": 4000 + rank}
    correlation = 1000
    for k, number in enumerate(STEPS):
        s = STEP_US * k + lag

        def kernel(name, stream, start, dur, args=None):
            nonlocal correlation
            correlation += 1
            a = {"device": rank, "stream": stream, "correlation": correlation}
            a.update(args or {})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": stream,
                       "ts": round(start, 3), "dur": dur, "args": a})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", **cpu,
                       "ts": round(start - 4, 3), "dur": 3.0, "args": {"correlation": correlation}})

        def collective(start, dur):
            args = {"Collective name": "allreduce", "In msg nelems": NELEMS, "Out msg nelems": NELEMS,
                    "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0",
                    "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"}
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", **cpu,
                       "ts": round(start - 6, 3), "dur": 4.0, "args": dict(args, Rank=rank)})
            kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 20,
                   start, dur, args)

        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", **cpu,
                   "ts": round(s, 3), "dur": STEP_US - 2, "args": {}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", **cpu, "ts": round(s + 1, 3), "dur": 3.0,
                   "args": {"flops": 2 * 4096 * 4096 * 8192}})
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", 7, s + 5, 300.0)
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", **cpu, "ts": round(s + 20, 3), "dur": 3.0,
                   "args": {"flops": 2 * 4096 * 4096 * 8192}})
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_dgrad", 7, s + 305, 250.0)
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_wgrad", 7, s + 555, 250.0)
        # Both ranks' all-reduces end together: rank 1 starts 2 us late and takes 2 us less.
        collective(s + 558, 150.0 - lag)
        collective(s + 808, 150.0 - lag)
        kernel("void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor>", 7, s + 962, 30.0)
    return ev


for r in (0, 1):
    write_trace(f"kineto_ddp_rank{r}.json", r, 2, events_of(r), BASE_NS)
