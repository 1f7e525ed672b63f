#!/usr/bin/env python3
"""Time to a target P@1 and best P@1 from xmltrain metrics files (JSON lines), as a markdown table.

The figures headed "MLP:" are the MLP's evaluations during training, which the metrics files hold:
the time to the target, its best and its last P@1. The final model's P@1, with the shortlist
ranker it ends with by default, is the run's summary's p1 (not in these files: --summary
NAME=LOG reads it from the run's stdout), and no evaluation's time applies to it; the table
names that model ("MLP + ranker", or "MLP" with --ranker off).

Usage: time_to_accuracy.py [--target P1 | --target-fraction F] [--fractions F,F,...]
                           [--clock virtual|wall] [--baseline NAME] [--summary NAME=STDOUT.log ...]
                           NAME=METRICS.jsonl ...
A NAME given several times is one configuration over several seeds: its i-th file pairs with the
i-th file of every other name (the same seed). A row per name gives the means over its seeds
(± the standard deviation when there are several) and the speed-up over the baseline (--baseline,
default the configuration slowest to the target): the paired per-seed ratio of the times to the
target, its geometric mean with a 95% t interval on the log ratios; an interval that holds 1
reads "no difference", and a single seed says "one seed" in the cell.
The target defaults to F (0.95) times the lowest best P@1 among the runs, so that every run can
reach it. A second table gives the speed-ups again at several targets, --fractions (default
0.8,0.9,0.95,0.98; '' for none) times that lowest best P@1, against the same baseline: one target
can fall where the curves are noisiest, and a conclusion should hold at all of them.
A run named slide (--algo slide) is shown as "SLIDE (1 CPU)": it trains on one CPU device and
on the wall clock, so it gets no speed-up (the others' times may be virtual), and a note under
the table says so.
Times say their clock: the files do not record it, so --clock gives it (default: virtual where a
file's evaluations list several devices, xmltrain's default for them, else wall); the wall s
column is the wall time each run took, evaluations included.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot import load_metrics_files, run_clock  # noqa: E402  (scripts/plot.py; no matplotlib needed)
from speedup import METHOD, paired_ratios, speedup_text  # noqa: E402  (scripts/speedup.py)

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


def mean(values, digits, spread=True):
    """'0.3200', or '0.3200 ± 0.0100' over several values; '-' for none."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    text = f"{statistics.fmean(values):.{digits}f}"
    return text + (f" ± {statistics.stdev(values):.{digits}f}" if spread and len(values) > 1 else "")


def seed_numbers(records, target):
    best = max(records, key=lambda r: r["p1"])
    reached = next((r for r in records if r["p1"] >= target), None)
    return {"time": reached["train_time_s"] if reached else None, "mb": reached["megabatch"] if reached else None,
            "best": best["p1"], "best_t": best["train_time_s"], "last": records[-1]["p1"],
            "total": records[-1]["train_time_s"], "wall": records[-1].get("wall_time_s")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, help="P@1 to reach")
    parser.add_argument("--target-fraction", type=float, default=0.95)
    parser.add_argument("--clock", choices=("virtual", "wall"), help="the clock of the files' times")
    parser.add_argument("--baseline", help="the NAME the speed-ups are over (default: the slowest to the target)")
    parser.add_argument("--summary", action="append", default=[], metavar="NAME=LOG",
                        help="a run's stdout, whose summary gives its final model's P@1 (repeatable)")
    parser.add_argument("--fractions", default="0.8,0.9,0.95,0.98",
                        help="the second table's targets, as fractions of the lowest best P@1 ('' for none)")
    parser.add_argument("runs", nargs="+", metavar="NAME=FILE")
    args = parser.parse_args()
    try:
        fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    except ValueError:
        parser.error(f"--fractions must be numbers separated by commas, not {args.fractions!r}")
    if any(not 0 < f <= 1 for f in fractions):
        parser.error("--fractions must be in (0, 1]")

    configs = {}  # name -> [records of each seed], in the order given
    for item in args.runs:
        name, _, path = item.partition("=")
        records = load(path)
        if not records:
            sys.exit(f"time_to_accuracy: {path} has no evaluations")
        configs.setdefault(name, []).append(records)
    finals = {}
    for item in args.summary:
        name, _, path = item.partition("=")
        finals.setdefault(name, []).append(final_model(path))
    if args.baseline is not None and args.baseline not in configs:
        sys.exit(f"time_to_accuracy: --baseline {args.baseline} names no run ({', '.join(configs)})")

    lowest_best = min(max(r["p1"] for r in records) for seeds in configs.values() for records in seeds)
    target = args.target
    if target is None:
        target = args.target_fraction * lowest_best
    numbers = {name: [seed_numbers(records, target) for records in seeds] for name, seeds in configs.items()}
    times = {name: {i: n["time"] for i, n in enumerate(seeds)} for name, seeds in numbers.items()}
    baseline = args.baseline
    if baseline is None:
        reached = {name: statistics.fmean(t for t in seeds.values() if t is not None)
                   for name, seeds in times.items() if name != "slide" and any(t is not None for t in seeds.values())}
        baseline = max(reached, key=reached.get) if reached else None

    clocks = {run["variant"]: run_clock(run) for run in load_metrics_files(args.runs, args.clock)}
    unit = sorted(set(clocks.values()))
    unit = f"{unit[0]} s" if len(unit) == 1 else "s, clock per run"
    print(f"target P@1 = {target:.4f}\n")
    print(f"| run | seeds | MLP: time to target ({unit}) | MLP: mega-batches to target | speed-up over "
          f"{SLIDE_LABEL if baseline == 'slide' else baseline or '-'} | MLP: best P@1 | at ({unit}) | MLP: last P@1 | "
          f"total ({unit}) | wall s | final model | final model: P@1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, seeds in numbers.items():
        count = sum(1 for n in seeds if n["time"] is not None)
        t_text = mean([n["time"] for n in seeds], 2) if count else "not reached"
        if 0 < count < len(seeds):
            t_text += f" ({count}/{len(seeds)} reached)"
        if name == baseline:
            faster = "baseline"
        elif name == "slide" or baseline is None:
            faster = "-"
        else:
            faster = speedup_text(paired_ratios(times[baseline], times[name]))
        label = SLIDE_LABEL if name == "slide" else name
        if len(set(clocks.values())) > 1:
            label += f" ({clocks[name]} clock)"
        model = " / ".join(sorted({kind for kind, _ in finals.get(name, [])})) or "-"
        print(f"| {label} | {len(seeds)} | {t_text} | {mean([n['mb'] for n in seeds], 1, spread=False).removesuffix('.0')} "
              f"| {faster} | {mean([n['best'] for n in seeds], 4)} | {mean([n['best_t'] for n in seeds], 2, False)} | "
              f"{mean([n['last'] for n in seeds], 4)} | {mean([n['total'] for n in seeds], 2, False)} | "
              f"{mean([n['wall'] for n in seeds], 1, False)} | {model} | "
              f"{mean([p1 for _, p1 in finals.get(name, [])], 4)} |")

    print(f"\nSpeed-up: {METHOD}.")
    others = [name for name in configs if name not in (baseline, "slide")]
    if fractions and baseline is not None and baseline != "slide" and others:
        print(f"\nThe speed-ups over {baseline} at several targets, fractions of the lowest best P@1 ({lowest_best:.4f}):\n")
        print("| run | " + " | ".join(f"at {f:g} x = {f * lowest_best:.4f}" for f in fractions) + " |")
        print("|---|" + "---|" * len(fractions))
        for name in others:
            cells = []
            for f in fractions:
                t = {n: {i: seed_numbers(records, f * lowest_best)["time"] for i, records in enumerate(seeds)}
                     for n, seeds in configs.items() if n in (name, baseline)}
                ratios = paired_ratios(t[baseline], t[name])
                cells.append(speedup_text(ratios) if ratios else "not reached")
            print(f"| {name} | " + " | ".join(cells) + " |")
    if any(name == "slide" for name in configs):
        print(f"\n{SLIDE_LABEL}: one CPU device (SLIDE's sampled output layer, its threads sharing the model) "
              "against the others' devices; its times are wall-clock seconds, so it has no speed-up.")


if __name__ == "__main__":
    main()
