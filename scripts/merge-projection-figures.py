#!/usr/bin/env python3
"""The markdown table and the chart of the projected merge times (benchmarks/merge_projection.cc,
run by scripts/bench-merge-projection.sh) from its CSV.

Usage: scripts/merge-projection-figures.py CSV --table TABLE.md --chart CHART.png
"""
import argparse
import csv
import sys

LINKS = {"pcie4": "PCIe 4.0 x16", "nvlink4": "NVLink 4"}
# The schedules in the order the table and chart show them, with what each row is.
SCHEDULES = [
    ("copy_floor", "copy floor"),
    ("nccl_formula", "NCCL ring: floor + 2(N-1) latencies"),
    ("nccl_style", "NCCL-style pipelined ring"),
    ("ring_1_partition", "our ring, 1 partition"),
    ("ring_n_partitions", "our ring, N partitions"),
    ("ring_momentum", "our ring + global momentum (training's merge)"),
    ("nccl_all_reduce", "our NcclAllReduce"),
    ("nccl_all_reduce_momentum", "our NcclAllReduce + global momentum"),
    ("adasum", "our DeviceAdasum (vector halving + gather)"),
    ("tree", "binary tree, pipelined"),
]
# The plain sum that the others are compared with (Adasum's goal: at most 1.3x of it).
BASELINE = "ring_n_partitions"


def key(row):
    s = row["schedule"]
    return "ring_n_partitions" if s.startswith("ring_") and s.endswith("_partitions") and s != "ring_1_partition" else s


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--table", required=True)
    parser.add_argument("--chart", required=True)
    args = parser.parse_args()
    with open(args.csv) as f:
        rows = [r for r in csv.DictReader(f)]
    configs = sorted({(r["link"], int(r["gpus"])) for r in rows}, key=lambda c: (list(LINKS).index(c[0]), c[1]))
    by = {(r["link"], int(r["gpus"]), key(r)): r for r in rows}

    lines = ["| link | GPUs | schedule | how | projected ms | copy floor ms | floor / projected | x our ring's sum |",
             "|---|---:|---|---|---:|---:|---:|---:|"]
    for link, gpus in configs:
        base = by.get((link, gpus, BASELINE))
        for schedule, label in SCHEDULES:
            r = by.get((link, gpus, schedule))
            if r is None:
                continue
            ratio = f"{float(r['projected_ms']) / float(base['projected_ms']):.2f}x" if base else "-"
            lines.append(f"| {LINKS.get(link, link)} | {gpus} | {label} | {r['method']} | "
                         f"{float(r['projected_ms']):.2f} | {float(r['floor_ms']):.2f} | "
                         f"{100 * float(r['floor_fraction']):.0f}% | {ratio} |")
    with open(args.table, "w") as f:
        f.write("\n".join(lines) + "\n")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(LINKS), figsize=(14, 5))
    for ax, link in zip(axes, LINKS):
        counts = [g for l, g in configs if l == link]
        width = 0.8 / len(SCHEDULES)
        for i, (schedule, label) in enumerate(SCHEDULES):
            values = [float(by[(link, g, schedule)]["projected_ms"]) if (link, g, schedule) in by else 0
                      for g in counts]
            xs = [c + (i - (len(SCHEDULES) - 1) / 2) * width for c in range(len(counts))]
            ax.bar(xs, values, width, label=label, hatch="//" if schedule == "copy_floor" else None)
        ax.set_xticks(range(len(counts)))
        ax.set_xticklabels([f"{g} replicas, {g} GPUs" for g in counts])
        ax.set_ylabel("projected merge time (ms)")
        ax.set_title(f"{LINKS[link]} (projection, not measured)")
    # Below the panels: inside them it would hide the tallest bars.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    fig.suptitle("Merging Amazon-670K replicas (415 MB fp32): simulated schedules against the copy floor")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(args.chart, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
