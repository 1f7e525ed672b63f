#!/usr/bin/env python3
"""The paper's scaling figure from a sweep over device counts: time and epochs to a target P@1.

Usage: scripts/scaling_report.py SWEEP_DIR [--out REPORT.md]

SWEEP_DIR is a scripts/sweep.py folder whose runs differ by --devices (and --speed) and seed, as
scripts/experiments/scaling.toml makes them. For each seed, the target is 95% of the one-device
run's best P@1 less one standard error of that P@1 on the test set (sqrt(p (1 - p) / rows)), so
every device count is held to the same bar as one device on the same seed. For each device count:
the time to the target (the first evaluation at or above it) on the run's clock, its speed-up over
one device as the paired geometric mean with a 95% t interval over seeds (scripts/speedup.py), the
epochs to the target with a t interval, the whole run's speed-up, and the final P@1 (the last
evaluation, never the best). Python standard library only.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speedup import T_975, speedup_text  # noqa: E402


def device_count(flags):
    spec = flags.get("devices", "cpu:1")
    total = 0
    for part in spec.split(","):
        m = re.fullmatch(r"\w+:(\d+)(?:x(\d+))?", part.strip())
        if not m:
            raise SystemExit(f"scaling_report: cannot count the devices of --devices {spec!r}")
        total += int(m.group(2)) if m.group(2) else (int(m.group(1)) if part.startswith("cpu") else 1)
    return total


def load(sweep):
    runs = {}  # (devices, seed) -> metrics records
    clock = set()
    with open(os.path.join(sweep, "index.jsonl")) as index:
        for line in index:
            entry = json.loads(line)
            if entry.get("status") != "ok":
                continue
            flags = entry["flags"]
            clock.add(flags.get("clock", "virtual"))
            path = os.path.join(sweep, "runs", entry["id"] + ".jsonl")
            with open(path) as f:
                records = [json.loads(x) for x in f if x.strip()]
            if records:
                runs[(device_count(flags), int(flags["seed"]))] = records
    return runs, clock


def mean_interval(values, digits=2):
    """'m (lo-hi)' with a 95% t interval, or 'm (one seed)'."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.{digits}f} (one seed)"
    t = T_975[len(values) - 2] if len(values) - 2 < len(T_975) else 1.96
    half = t * statistics.stdev(values) / math.sqrt(len(values))
    return f"{m:.{digits}f} ({m - half:.{digits}f}-{m + half:.{digits}f})"


def first_at(records, target):
    return next((r for r in records if r["p1"] >= target), None)


def report(runs, clock):
    seeds = sorted({s for d, s in runs if d == 1})
    if not seeds:
        raise SystemExit("scaling_report: the sweep has no finished one-device run to hold the others to")
    targets = {}
    for s in seeds:
        one = runs[(1, s)]
        best = max(r["p1"] for r in one)
        targets[s] = 0.95 * best - math.sqrt(best * (1 - best) / one[-1]["test_rows"])
    clock_name = "/".join(sorted(clock))
    lines = [
        f"Every time is on the **{clock_name}** clock. Target per seed: 95% of the one-device run's best "
        f"P@1 less one standard error ({', '.join(f'{targets[s]:.4f}' for s in seeds)} for seeds "
        f"{', '.join(map(str, seeds))}). Intervals are 95% t intervals over the seeds.",
        "",
        f"| devices | seeds | time to target ({clock_name} s) | speed-up to target | epochs to target "
        "| whole run's speed-up | final model's P@1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in sorted({d for d, _ in runs}):
        times, base_times, epochs, total_ratios, finals, missed = {}, {}, [], [], [], 0
        for s in seeds:
            if (n, s) not in runs:
                continue
            rec, one = runs[(n, s)], runs[(1, s)]
            hit, one_hit = first_at(rec, targets[s]), first_at(one, targets[s])
            finals.append(rec[-1]["p1"])
            total_ratios.append(one[-1]["train_time_s"] / rec[-1]["train_time_s"])
            if hit is None:
                missed += 1
                continue
            times[s], base_times[s] = hit["train_time_s"], one_hit["train_time_s"]
            epochs.append(hit["epoch"])
        ratios = [base_times[s] / times[s] for s in times]
        missed_note = f", {missed} never reached it" if missed else ""
        lines.append(
            f"| {n} | {len(finals)}{missed_note} | {mean_interval(list(times.values()), 3) if times else '-'} "
            f"| {speedup_text(ratios) if n != 1 else '1x'} | {mean_interval(epochs) if epochs else '-'} "
            f"| {speedup_text(total_ratios) if n != 1 else '1x'} | {mean_interval(finals, 4)} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep")
    parser.add_argument("--out", help="write the table here too")
    args = parser.parse_args()
    runs, clock = load(args.sweep)
    text = report(runs, clock)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
