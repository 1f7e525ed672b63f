#!/usr/bin/env python3
"""Time to P@1 thresholds per seed and on the curve averaged over seeds, from a CSV of learning curves.

Usage: seed_curves.py CURVES.csv [--thresholds 0.87,0.88,...] [--png OUT.png]
CURVES.csv has a header and the columns algo, seed, epoch, virtual_s and p1 (others are ignored),
one line per evaluation. At the top of a learning curve one evaluation's noise is as large as the
gaps between algorithms, so a threshold near the best P@1 is reached early or late by chance in a
single run; the curve averaged over seeds (each epoch's mean P@1, the epochs' times of the first
seed, which the virtual clock makes the same for every seed) is the expected curve. Prints markdown
tables: each run's first time at each threshold, then the averaged curves' and the ratio of the
first algorithm's times to the others'.
"""
import argparse
import csv
import sys
from collections import defaultdict


def first_time(points, threshold):
    """(virtual seconds, epoch) of the first evaluation at or above threshold, or None."""
    for epoch, seconds, p1 in points:
        if p1 >= threshold:
            return seconds, epoch
    return None


def cell(hit):
    return "not reached" if hit is None else f"{hit[0]:.1f} s (epoch {hit[1]:g})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curves")
    parser.add_argument("--thresholds", default="0.87,0.88,0.885,0.89,0.892")
    parser.add_argument("--png", help="also plot the averaged curves against the virtual clock")
    args = parser.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",")]

    runs = defaultdict(list)  # (algo, seed) -> [(epoch, seconds, p1)]
    with open(args.curves, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            try:
                runs[(row["algo"], int(row["seed"]))].append(
                    (float(row["epoch"]), float(row["virtual_s"]), float(row["p1"])))
            except (KeyError, ValueError) as error:
                sys.exit(f"seed_curves.py: {args.curves}:{line}: {error}")
    algos = list(dict.fromkeys(algo for algo, _ in runs))

    header = "| run | best P@1 (epoch) | " + " | ".join(f"P@1 >= {t}" for t in thresholds) + " |"
    print(header)
    print("|" + "---|" * (len(thresholds) + 2))
    for (algo, seed), points in runs.items():
        best = max(points, key=lambda p: p[2])
        cells = " | ".join(cell(first_time(points, t)) for t in thresholds)
        print(f"| {algo}, seed {seed} | {best[2]:.4f} ({best[0]:g}) | {cells} |")

    averaged = {}
    for algo in algos:
        seeds = [points for (a, _), points in runs.items() if a == algo]
        length = min(len(points) for points in seeds)
        averaged[algo] = [(seeds[0][e][0], seeds[0][e][1], sum(points[e][2] for points in seeds) / len(seeds))
                          for e in range(length)]
    print()
    print("| averaged over seeds | best mean P@1 (epoch) | " + " | ".join(f"P@1 >= {t}" for t in thresholds) + " |")
    print("|" + "---|" * (len(thresholds) + 2))
    for algo, points in averaged.items():
        count = sum(1 for a, _ in runs if a == algo)
        best = max(points, key=lambda p: p[2])
        cells = " | ".join(cell(first_time(points, t)) for t in thresholds)
        print(f"| {algo} ({count} seeds) | {best[2]:.4f} ({best[0]:g}) | {cells} |")
    first = algos[0]
    for other in algos[1:]:
        ratios = []
        for t in thresholds:
            mine, theirs = first_time(averaged[first], t), first_time(averaged[other], t)
            if mine is None:
                ratios.append("-")
            elif theirs is None:
                ratios.append(f"> {averaged[other][-1][1] / mine[0]:.2f} ({other} never)")
            else:
                ratios.append(f"{theirs[0] / mine[0]:.2f}")
        print(f"| {other} / {first} | | " + " | ".join(ratios) + " |")

    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for algo, points in averaged.items():
            line, = ax.plot([p[1] for p in points], [p[2] for p in points], label=f"{algo} (mean)")
            for (a, _), seed_points in runs.items():
                if a == algo:
                    ax.plot([p[1] for p in seed_points], [p[2] for p in seed_points], color=line.get_color(),
                            alpha=0.25, linewidth=0.8)
        for t in thresholds:
            ax.axhline(t, color="grey", linewidth=0.5, linestyle=":")
        top = max(p[2] for points in runs.values() for p in points)
        ax.set_ylim(thresholds[0] - 0.03, top + 0.005)
        ax.set_xlabel("virtual seconds")
        ax.set_ylabel("validation P@1")
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)


if __name__ == "__main__":
    main()
