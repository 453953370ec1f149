"""Writes a hand-made Kineto trace file as PyTorch's profiler lays one out (the
fixtures' generators, make_kineto_*.py, share it): one top-level key per line,
one trace event per line."""
import json


def write_trace(path, rank, world_size, events, base_ns):
    device = {"id": rank, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85031714816, "computeMajor": 9,
              "computeMinor": 0, "numSms": 132}
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size},
        "deviceProperties": [device],
        "traceEvents": events,
        "traceName": f"rank{rank}.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
    }
    with open(path, "w") as f:
        f.write("{\n")
        keys = list(doc)
        for i, key in enumerate(keys):
            sep = "," if i < len(keys) - 1 else ""
            if key == "traceEvents":
                f.write('  "traceEvents": [\n')
                f.write(",\n".join("  " + json.dumps(e) for e in doc[key]))
                f.write("\n  ]" + sep + "\n")
            else:
                f.write(f"  {json.dumps(key)}: {json.dumps(doc[key])}{sep}\n")
        f.write("}\n")
