#!/usr/bin/env python3
"""Time to a target P@1 and best P@1 from xmltrain metrics files (JSON lines), as a markdown table.

The figures headed "MLP:" are the MLP's evaluations during training, which the metrics files hold:
the time to the target, its best and its last P@1. The final model's P@1, with the shortlist
ranker it ends with by default, is the run's summary's p1 (not in these files: --summary
NAME=LOG reads it from the run's stdout), and no evaluation's time applies to it; the table
names that model ("MLP + ranker", or "MLP" with --ranker off).

Usage: time_to_accuracy.py [--target P1 | --target-fraction F] [--clock virtual|wall]
                           [--summary NAME=STDOUT.log ...] NAME=METRICS.jsonl ...
The target defaults to F (0.95) times the lowest best P@1 among the runs, so that every run can
reach it; 'x faster' compares each run's time to target with the slowest run's.
A run named slide (--algo slide) is shown as "SLIDE (1 CPU)": it trains on one CPU device and
on the wall clock, so it is left out of 'x faster' (the others' times may be virtual), and a note
under the table says so.
Times say their clock: the files do not record it, so --clock gives it (default: virtual where a
file's evaluations list several devices, xmltrain's default for them, else wall); the last column
is the wall time each run took, evaluations included.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot import load_metrics_files, run_clock  # noqa: E402  (scripts/plot.py; no matplotlib needed)

SLIDE_LABEL = "SLIDE (1 CPU)"  # as scripts/plot.py labels it

def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def final_model(path):
    """("MLP + ranker" or "MLP", its P@1) from the last summary line of a run's stdout."""
    summary = {}
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("{") and '"summary"' in line:
                summary = json.loads(line)
    if "p1" not in summary:
        sys.exit(f"time_to_accuracy: {path} holds no summary line with p1")
    return ("MLP + ranker" if (summary.get("ranker") or {}).get("used") else "MLP"), summary["p1"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, help="P@1 to reach")
    parser.add_argument("--target-fraction", type=float, default=0.95)
    parser.add_argument("--clock", choices=("virtual", "wall"), help="the clock of the files' times")
    parser.add_argument("--summary", action="append", default=[], metavar="NAME=LOG",
                        help="a run's stdout, whose summary gives its final model's P@1 (repeatable)")
    parser.add_argument("runs", nargs="+", metavar="NAME=FILE")
    args = parser.parse_args()

    runs = []
    for item in args.runs:
        name, _, path = item.partition("=")
        records = load(path)
        if not records:
            sys.exit(f"time_to_accuracy: {path} has no evaluations")
        runs.append((name, records))

    target = args.target
    if target is None:
        target = args.target_fraction * min(max(r["p1"] for r in records) for _, records in runs)

    rows = []
    for name, records in runs:
        best = max(records, key=lambda r: r["p1"])
        reached = next((r for r in records if r["p1"] >= target), None)
        rows.append((name, reached["train_time_s"] if reached else None, reached["megabatch"] if reached else None,
                     best["p1"], best["train_time_s"], records[-1]["p1"], records[-1]["train_time_s"]))
    slowest = max((t for name, t, *_ in rows if t is not None and name != "slide"), default=None)

    finals = {}
    for item in args.summary:
        name, _, path = item.partition("=")
        finals[name] = final_model(path)
    clocks = {run["variant"]: run_clock(run) for run in load_metrics_files(args.runs, args.clock)}
    unit = sorted(set(clocks.values()))
    unit = f"{unit[0]} s" if len(unit) == 1 else "s, clock per run"
    print(f"target P@1 = {target:.4f}\n")
    print(f"| run | MLP: time to target ({unit}) | MLP: mega-batches to target | x faster | MLP: best P@1 | "
          f"at ({unit}) | MLP: last P@1 | total ({unit}) | wall s | final model | final model: P@1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, t, mb, best, best_t, final, total), (_, records) in zip(rows, runs):
        faster = f"{slowest / t:.2f}" if t and slowest and name != "slide" else "-"
        t_text = f"{t:.2f}" if t is not None else "not reached"
        label = SLIDE_LABEL if name == "slide" else name
        if len(set(clocks.values())) > 1:
            label += f" ({clocks[name]} clock)"
        wall = records[-1].get("wall_time_s")
        print(f"| {label} | {t_text} | {mb if mb is not None else '-'} | {faster} | {best:.4f} | {best_t:.2f} | "
              f"{final:.4f} | {total:.2f} | {f'{wall:.1f}' if wall is not None else '-'} | "
              f"{finals[name][0] if name in finals else '-'} | "
              f"{f'{finals[name][1]:.4f}' if name in finals else '-'} |")

    if any(name == "slide" for name, *_ in rows):
        print(f"\n{SLIDE_LABEL}: one CPU device (SLIDE's sampled output layer, its threads sharing the model) "
              "against the others' devices; its times are wall-clock seconds, so it has no 'x faster'.")


if __name__ == "__main__":
    main()
