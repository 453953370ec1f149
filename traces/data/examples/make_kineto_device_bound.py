#!/usr/bin/env python3
"""Writes kineto_device_bound_rank0.json: a synthetic one-GPU training loop
that never synchronises, in the format PyTorch 2.x's profiler (Kineto)
exports, for tests/scripts/replay_traces_test.sh.

Not recorded from a run: the times come from the loop below, a ground truth.
One host thread launches 50 kernels a step onto CUDA stream 7, each launch
5 us (its cudaLaunchKernel 4.5 us), then 50 us of its own work and a 20 us gap
before the next step's marker: 320 us a step. The device runs the kernels in
launch order, 60 us each: 3,000 us a step. Nothing waits for the device, so
the host runs steps ahead and the device's queue carries across the markers
(at most 1,024 launches pending, as CUDA's queue; not reached here). Two steps
run before the profiler records (its wait and warm-up), then three recorded
steps, ProfilerStep#2 to #4; at the end the profiler waits for the device, so
every recorded step's kernels are in the trace. The loop's pace is the
device's, 3,000 us a step; measured by the markers it would be 320 us, and by
the markers plus the last kernel's end, the window's drain, about twice 3,000.
Run from this folder: python3 make_kineto_device_bound.py
"""

from kineto_fixture import write_trace

KERNELS, LAUNCH_US, KERNEL_US, HOST_TAIL_US, GAP_US = 50, 5.0, 60.0, 50.0, 20.0
UNRECORDED, RECORDED, QUEUE = 2, 3, 1024


def events():
    ev = [
        {"ph": "M", "name": "process_name", "pid": 4000, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 4000, "tid": 4000, "args": {"name": "thread 4000 (python3)"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    ]
    cpu = {"pid": 4000, "tid": 4000}
    host, device_free, pending, correlation = 0.0, 0.0, [], 1000
    for step in range(UNRECORDED + RECORDED):
        recorded = step >= UNRECORDED
        start = host
        for k in range(KERNELS):
            pending = [end for end in pending if end > host]
            if len(pending) >= QUEUE:  # a full queue: the launch waits for a slot
                host = sorted(pending)[len(pending) - QUEUE]
            launch = host
            host += LAUNCH_US
            begin = max(device_free, host)
            device_free = begin + KERNEL_US
            pending.append(device_free)
            correlation += 1
            if recorded:
                ev.append({"ph": "X", "cat": "kernel", "name": f"void elementwise_kernel_{k}", "pid": 0, "tid": 7,
                           "ts": round(begin, 3), "dur": KERNEL_US,
                           "args": {"device": 0, "stream": 7, "correlation": correlation}})
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", **cpu,
                           "ts": round(launch, 3), "dur": LAUNCH_US - 0.5, "args": {"correlation": correlation}})
        host += HOST_TAIL_US
        if recorded:
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", **cpu,
                       "ts": round(start, 3), "dur": round(host - start, 3), "args": {}})
        host += GAP_US
    return ev


write_trace("kineto_device_bound_rank0.json", 0, 1, events(), 1_700_000_000_000_000_000)
