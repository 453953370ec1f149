#!/usr/bin/env bash
# Regenerates the pictures of docs/tutorial.md from the tutorial's own
# commands, run again in a scratch folder (about 2 minutes on 2 cores).
#
#   docs/img/make_images.sh [CLUSTERTWIN]     (default: build/cli/clustertwin)
#
# Needs gnuplot (pngcairo) and python3 (standard library only). The timeline
# pictures are drawn from the Perfetto traces the commands write: one row per
# (variant, stream) or per device, one box per trace event, coloured by the
# event's category. Open the same traces in https://ui.perfetto.dev
# ("Open trace file") to explore them interactively.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ct=$(realpath -e "${1:-$here/../../build/cli/clustertwin}")
work=$(mktemp -d "${TMPDIR:-/tmp}/ct-doc-images.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
run() {  # a tutorial command, its stdout kept in $1
  local out=$1; shift
  echo "+ clustertwin $*" >&2
  if ! "$ct" "$@" >"$out" 2>"$out.err"; then
    echo "failed: clustertwin $*" >&2
    tail -n 20 "$out" "$out.err" >&2
    exit 1
  fi
}

# 1. TorchRec's step at growing worker counts.
run torchrec.txt sim nestpipe --variant torchrec --workers 128,512,1536 --csv torchrec.csv
# 2. The pipelined variants' traces at 128 workers.
run pipelining.txt sim nestpipe --variant torchrec,semisync,dbp,fwp,nestpipe --workers 128 --trace-dir traces
# 3. Staleness: the version oracle of the real executor on 2 processes.
run stale-torchrec.txt launch --nproc 2 -- run nestpipe --variant torchrec --steps 10
run stale-semisync.txt launch --nproc 2 -- run nestpipe --variant semisync --steps 10
run stale-dbp.txt launch --nproc 2 -- run nestpipe --variant dbp --steps 10
run stale-dbp-nopatch.txt launch --nproc 2 -- run nestpipe --variant dbp --no-patch --steps 10
# 4. FlexMARL's frameworks on the paper's MA workload.
run flexmarl.txt sim flexmarl --trace-dir flexmarl --csv flexmarl.csv
# 5. FlowTrain: the allocator's split, then fixed splits around it.
run flowtrain.txt sim flowtrain --workers 256,1024 --csv modes.csv
for e in 32 64 96 144 192 256 384; do
  run "split-$e.txt" sim flowtrain --mode flowtrain,disagg-sync --encoder-workers "$e" --csv "split-$e.csv"
done
# 6. Capacity planning: the planner draws its own picture.
run plan.txt plan nestpipe --target-throughput 4e5 --plot "$here/plan-nestpipe.png"
# 7. Dense LLM training: the split for GPT-3 175B on 1,024 H100s and its step's trace, on the profile fitted to the
#    published steps kept for fitting (experiments/llm/results/h100-dgx-fitted.yaml, from ct_llm_study).
fitted="$here/../../experiments/llm/results/h100-dgx-fitted.yaml"
run llm-plan.txt plan llm --workers 1024 --platform "$fitted"
run llm.txt sim llm --platform "$fitted" --workers 1024 --tp 4 --pp 8 --micro-batch 1 --global-batch 1536 \
  --schedule interleaved --virtual-stages 6 --recompute none --zero 1 --sequence-parallel --trace llm

python3 - "$here" <<'PY'
import csv, glob, gzip, json, os, re, subprocess, sys

out_dir = sys.argv[1]
COLOURS = {"compute": "#4C72B0", "comm": "#DD8452", "copy": "#8C8C8C", "lookup": "#55A868",
           "host": "#8172B2", "idle": "#DDDDDD"}


def gnuplot(script, png):
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(f"wrote {png} ({os.path.getsize(png) // 1024} KB)", file=sys.stderr)


def read_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def boxes_script(rows, boxes, legend, png, title, xlabel, size, ytics=None):
    """A gnuplot script drawing boxes (x0, x1, y0, y1, colour) on labelled rows, top row first."""
    s = [f"set terminal pngcairo size {size} font 'sans,9'", f"set output '{png}'", f"set title '{title}'",
         f"set xlabel '{xlabel}'", "set style fill solid 1.0 noborder", "set grid xtics lc rgb '#E0E0E0'",
         f"set yrange [{len(rows)}:0]", "set key outside right top", "set xrange [0:*]"]
    tics = ytics if ytics is not None else [(name, i + 0.5) for i, name in enumerate(rows)]
    s.append("set ytics (" + ", ".join(f"'{n}' {y}" for n, y in tics) + ") scale 0")
    plots = []
    for label, colour in legend:
        block = [b for b in boxes if b[4] == colour]
        name = "$D" + re.sub(r"\W", "", label)
        s.append(f"{name} << EOD")
        s += [f"{(x0 + x1) / 2} {(y0 + y1) / 2} {(x1 - x0) / 2} {(y1 - y0) / 2}" for x0, x1, y0, y1, _ in block]
        s.append("EOD")
        plots.append(f"{name} using 1:2:3:4 with boxxyerror lc rgb '{colour}' title '{label}'")
    s.append("plot " + ", ".join(plots))
    return "\n".join(s) + "\n"


# 1. Stacked step time of TorchRec at 128, 512 and 1,536 workers.
rows = list(csv.DictReader(open("torchrec.csv")))
with open("shares.dat", "w") as f:
    for r in rows:
        step = float(r["step_ms"])
        f.write(f"{r['workers']} {float(r['compute_ms']) / 1e3} {float(r['lookup_ms']) / 1e3} "
                f"{float(r['exposed_comm_ms']) / 1e3} {float(r['other_ms']) / 1e3} "
                f"{100 * float(r['lookup_ms']) / step:.1f} {100 * float(r['comm_ms']) / step:.1f} {step / 1e3}\n")
png = f"{out_dir}/nestpipe-torchrec-shares.png"
gnuplot(f"""set terminal pngcairo size 640,360 font 'sans,9'
set output '{png}'
set title 'TorchRec step on the NPU twin: lookup and All2All grow with workers'
set style data histograms
set style histogram rowstacked
set style fill solid 1.0 border rgb '#FFFFFF'
set boxwidth 0.6
set ylabel 'step time (s)'
set xlabel 'workers'
set key outside right top
set yrange [0:7]
plot 'shares.dat' using 2:xtic(1) title 'dense compute' lc rgb '{COLOURS["compute"]}', \\
     '' using 3 title 'embedding lookup' lc rgb '{COLOURS["lookup"]}', \\
     '' using 4 title 'All2All (exposed)' lc rgb '{COLOURS["comm"]}', \\
     '' using 5 title 'other' lc rgb '{COLOURS["copy"]}', \\
     '' using 0:($8 + 0.35):(sprintf('lookup %s%%, a2a %s%%', strcol(6), strcol(7))) with labels notitle
""", png)


# 2. Rank 0's streams over two measured steps, per variant.
def step_window(events, step):
    """From the first compute event of `step` to the first compute event of `step` + 2."""
    starts = {}
    for e in events:
        s = e.get("args", {}).get("step")
        if e["cat"] == "compute" and s is not None:
            starts[s] = min(starts.get(s, e["ts"]), e["ts"])
    return starts[step], starts[step + 2]


rows, boxes = [], []
for variant in ["torchrec", "dbp", "fwp", "nestpipe"]:
    t = read_trace(f"traces/{variant}-128.json")
    streams = t["metadata"]["streams"]
    events = [e for e in t["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]
    t0, t1 = step_window(events, 6)
    base = len(rows)
    rows += [f"{variant}: {s}" for s in streams]
    for e in events:
        x0, x1 = max(e["ts"], t0), min(e["ts"] + e["dur"], t1)
        if x1 > x0:
            y = base + e["tid"]
            boxes.append(((x0 - t0) / 1e6, (x1 - t0) / 1e6, y + 0.1, y + 0.9, COLOURS[e["cat"]]))
png = f"{out_dir}/nestpipe-pipelining-timeline.png"
legend = [(c, COLOURS[c]) for c in ["compute", "comm", "copy", "lookup", "host"]]
gnuplot(boxes_script(rows, boxes, legend, png, "Rank 0 of 128 workers, two steps per variant (simulated)",
                     "seconds from the start of step 6", "900,520"), png)

# 3. What the version oracle counted in each real run.
runs = [("torchrec", "stale-torchrec.txt"), ("semisync", "stale-semisync.txt"), ("dbp", "stale-dbp.txt"),
        ("dbp --no-patch", "stale-dbp-nopatch.txt")]
with open("stale.dat", "w") as f:
    for label, path in runs:
        for line in open(path):
            m = re.match(r"\[rank 0\]\s+([\w-]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s*$", line)
            if m:
                f.write(f'"{label}" {m.group(6)} {m.group(7)}\n')
png = f"{out_dir}/nestpipe-staleness.png"
gnuplot(f"""set terminal pngcairo size 640,340 font 'sans,9'
set output '{png}'
set title 'Real runs, 2 processes, 10 batches: what the version oracle counted'
set style data histograms
set style histogram clustered gap 1
set style fill solid 1.0 border rgb '#FFFFFF'
set ylabel 'embedding rows'
set yrange [0:10000]
set key top left
plot 'stale.dat' using 2:xtic(1) title 'stale rows served' lc rgb '#C44E52', \\
     '' using 3 title 'rows patched by the dual buffer' lc rgb '{COLOURS["lookup"]}', \\
     '' using ($0 - 0.13):($2 + 300):2 with labels notitle, \\
     '' using ($0 + 0.13):($3 + 300):3 with labels notitle
""", png)

# 4. FlexMARL: every device's work in one step, per framework. A group task
# (training on a trainer group) is written once, on the group's first
# device, with args.group_size; it is drawn over the group's devices.
KINDS = {"decode": ("rollout (decode)", "#55A868"), "train": ("training", "#4C72B0"),
         "optimizer": ("training", "#4C72B0"), "swap": ("state swap / reload", "#8C8C8C"),
         "reload": ("state swap / reload", "#8C8C8C"), "publish": ("weight publish", "#DD8452")}
rows, boxes, tics = [], [], []
for framework in ["sync", "marti", "flexmarl"]:
    t = read_trace(f"flexmarl/{framework}.json")
    devices = t["metadata"]["world_size"]
    base = len(rows)
    rows += [f"{framework} {d}" for d in range(devices)]
    tics.append((framework, base + devices / 2))
    for e in t["traceEvents"]:
        if e["ph"] != "X":
            continue
        group = e.get("args", {}).get("group_size", 1)
        y0 = base + e["pid"]
        colour = KINDS[e["name"].split()[0]][1]
        boxes.append((e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6, y0 + 0.1, y0 + group - 0.1, colour))
legend = list(dict.fromkeys(KINDS.values()))
png = f"{out_dir}/flexmarl-timeline.png"
gnuplot(boxes_script(rows, boxes, legend, png, "One step on 48 NPUs, MA workload (simulated); a row per device",
                     "seconds", "900,460", tics), png)

# 5. FlowTrain: simulated rate against the split, and the allocator's min(R_enc, R_llm).
points = []
for path in glob.glob("split-*.csv"):
    for r in csv.DictReader(open(path)):
        points.append((int(r["encoder_workers"]), r["mode"], float(r["samples_per_s"]),
                       float(r["allocator_samples_per_s"])))
chosen = [r for r in csv.DictReader(open("modes.csv")) if r["mode"] == "flowtrain" and r["workers"] == "1024"][0]
with open("split.dat", "w") as f:
    for e in sorted({p[0] for p in points}):
        by_mode = {p[1]: p for p in points if p[0] == e}
        f.write(f"{e} {by_mode['flowtrain'][2]} {by_mode['disagg-sync'][2]} {by_mode['flowtrain'][3]}\n")
png = f"{out_dir}/flowtrain-matching.png"
gnuplot(f"""set terminal pngcairo size 640,360 font 'sans,9'
set output '{png}'
set title '6B+72B on 1,024 H100s (simulated): throughput against the encoder/backbone split'
set xlabel 'encoder workers (the rest train the backbone)'
set ylabel 'samples / s'
set key bottom right
set grid
set yrange [0:1100]
set arrow from {chosen['encoder_workers']},0 to {chosen['encoder_workers']},1100 nohead dt 3 lc rgb '#555555'
set label 'allocator: {chosen["encoder_workers"]}' at {int(chosen['encoder_workers']) + 6},60
plot 'split.dat' using 1:4 with lines dt 2 lw 2 lc rgb '#555555' title 'allocator: min(R_{{enc}}, R_{{llm}})', \\
     '' using 1:2 with linespoints pt 7 lw 2 lc rgb '{COLOURS["compute"]}' title 'flowtrain', \\
     '' using 1:3 with linespoints pt 5 lw 2 lc rgb '{COLOURS["comm"]}' title 'disagg-sync'
""", png)


# 7. GPT-3 175B on 1,024 H100s: the first GPU of each pipeline stage over one step.
t = read_trace("llm/llm-1024.json")
events = [e for e in t["traceEvents"] if e["ph"] == "X"]
stage_gpus = 128  # tp 4 x dp 32
rows, boxes = [], []
for stage in range(8):
    rows.append(f"stage {stage}")
    for e in events:
        if e["pid"] != stage * stage_gpus or e["tid"] not in (0, 5):
            continue
        y = stage + (0.55 if e["tid"] == 5 else 0.1)
        colour = COLOURS["compute"] if e["cat"] == "compute" else COLOURS["comm"] if e["tid"] == 0 else COLOURS["lookup"]
        boxes.append((e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6, y, y + (0.3 if e["tid"] == 5 else 0.8), colour))
png = f"{out_dir}/llm-gpt3-timeline.png"
legend = [("passes", COLOURS["compute"]), ("TP all-reduce", COLOURS["comm"]), ("DP reduce/gather", COLOURS["lookup"])]
gnuplot(boxes_script(rows, boxes, legend, png, "GPT-3 175B on 1,024 H100s: one step, first GPU of each stage (simulated)",
                     "seconds", "760,340"), png)
PY
