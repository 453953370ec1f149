#!/usr/bin/env python3
"""Writes kineto_pipeline_rank0.json and kineto_pipeline_rank1.json: a
synthetic two-stage pipeline on two ranks (rank 0 runs stage 0, rank 1
stage 1) in the format PyTorch 2.x's profiler (Kineto) exports, three
profiler steps per rank, for the point-to-point derivation of
`trace derive-plan` (models/plan/import/kineto_plan.h).

Not recorded from a run: every time below is chosen. Both ranks' steps start
together, every 1,400 us (ProfilerStep marker at S). Per step:

  rank 0  stream 7   forward GEMM        S+5    205 us   -> S+210
          stream 24  send activations    S+213   17 us   -> S+230  (after the forward)
          stream 24  recv gradients      S+232  621 us   -> S+853  (waits for rank 1's send)
          stream 7   backward GEMM       S+856  400 us   -> S+1256 (after the recv)
          stream 7   optimizer kernel    S+1256  30 us   -> S+1286
  rank 1  stream 24  recv activations    S+5    225 us   -> S+230  (waits for rank 0's send)
          stream 7   forward GEMM        S+233  200 us   -> S+433  (after the recv)
          stream 7   backward GEMM       S+433  400 us   -> S+833
          stream 24  send gradients      S+836   17 us   -> S+853  (after the backward)
          stream 7   optimizer kernel    S+833   30 us   -> S+863

A send and its recv end together; each transfer takes 20 us from when both
sides are ready (the send's producer ended 3 us before the send kernel
started). Both carry 4,194,304 BFloat16 elements (8,388,608 bytes). The host
launches a step's five kernels at S+1, S+6, S+11, S+16 and S+21 (3 us each);
a send or recv launch sits inside a `record_param_comms` operator (from 1 us
before the launch, 4.5 us long) with the c10d args PyTorch 2.x writes for
point-to-point ("Collective name" send/recv, "Rank" the peer's group rank,
"Dst Rank"/"Src Rank" its global rank, "Process Group Ranks"); the NCCL
kernels themselves carry no args, as the SendRecv kernels of older versions.
Run from this folder: python3 make_kineto_pipeline.py
"""

from kineto_fixture import write_trace

BASE_NS = 1_700_000_000_000_000_000
STEP_US = 1400.0
STEPS = (3, 4, 5)  # the ProfilerStep numbers
NELEMS = 4 * 1024 * 1024
SENDRECV = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
FWD = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"
BWD = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_wgrad"
ADAM = "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor>"

# (name, stream, start, duration, point-to-point) per rank, times from the step's start; in launch order.
WORK = {
    0: [(FWD, 7, 5, 205, None), (SENDRECV, 24, 213, 17, "send"), (SENDRECV, 24, 232, 621, "recv"),
        (BWD, 7, 856, 400, None), (ADAM, 7, 1256, 30, None)],
    1: [(SENDRECV, 24, 5, 225, "recv"), (FWD, 7, 233, 200, None), (BWD, 7, 433, 400, None),
        (SENDRECV, 24, 836, 17, "send"), (ADAM, 7, 833, 30, None)],
}


def events_of(rank):
    peer = 1 - rank
    ev = [
        {"ph": "M", "name": "process_name", "pid": 5000 + rank, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 5000 + rank, "tid": 5000 + rank,
         "args": {"name": f"thread {5000 + rank} (python3)"}},
        {"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"GPU {rank}"}},
    ]
    cpu = {"pid": 5000 + rank, "tid": 5000 + rank}
    correlation = 2000
    for k, number in enumerate(STEPS):
        s = STEP_US * k
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", **cpu,
                   "ts": round(s, 3), "dur": STEP_US - 2, "args": {}})
        for i, (name, stream, start, dur, p2p) in enumerate(WORK[rank]):
            correlation += 1
            launch = s + 1 + 5 * i
            if p2p:
                args = {"Collective name": p2p, "In msg nelems": NELEMS, "Out msg nelems": NELEMS, "Group size": 2,
                        "dtype": "BFloat16", "Process Group Name": "0", "Process Group Description": "default_pg",
                        "Process Group Ranks": "[0, 1]", "Rank": peer,
                        ("Dst Rank" if p2p == "send" else "Src Rank"): peer}
                ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", **cpu,
                           "ts": round(launch - 1, 3), "dur": 4.5, "args": args})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": rank, "tid": stream,
                       "ts": round(s + start, 3), "dur": float(dur),
                       "args": {"device": rank, "stream": stream, "correlation": correlation}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", **cpu,
                       "ts": round(launch, 3), "dur": 3.0, "args": {"correlation": correlation}})
    return ev


for r in (0, 1):
    write_trace(f"kineto_pipeline_rank{r}.json", r, 2, events_of(r), BASE_NS)
