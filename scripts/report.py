#!/usr/bin/env python3
"""A markdown report of one sweep (scripts/sweep.py): accuracy, time to a target P@1, speed-up
over elastic SGD, and the figures (made with scripts/plot.py).

Usage:
  scripts/report.py SWEEP_DIR [--target P1 | --target-fraction F] [--fractions F,F,...]
                    [--group-by FLAG[,FLAG]] [--baseline NAME] [--figures KIND,KIND | --no-figures]
                    [--out REPORT.md]

One table row per configuration (runs that differ only by seed; numbers are means over seeds,
with the spread when there are several): the MLP's best P@1, P@3 and P@5 over the evaluations
during training (the metrics files, headed "MLP:"), beside the final model's P@1 and what that
model is ("MLP + ranker" with the default shortlist ranker, the summary's p1, which the sweep's
index keeps as final_p1; "MLP" with --ranker off), the MLP's time
and the mega-batches to the target P@1 (over the seeds that reached it), and the speed-up over
the baseline of the same group: the configuration whose --group-by value (default: --algo when
the grid sweeps it, else the variant when the sweep has variants, else --algo) is --baseline
(default elastic), or else whose --algo is, among the configurations with the same variant and
values of the other swept flags. The speed-up pairs each seed's run with the baseline's of the
same seed: the geometric mean of the ratios of their times to the target, with a 95% t interval
on the log ratios (scripts/speedup.py); an interval that holds 1 reads "no difference", and a
single seed says "one seed" in the cell itself. The figures mark the target. The target is
--target, or F (0.95) times the lowest best P@1 among the configurations, as in
scripts/time_to_accuracy.py. One target can sit where the curves are noisiest (near their
plateau, where a seed's time to it moves by half), so a second table gives every speed-up again
at several targets, --fractions (default 0.8,0.9,0.95,0.98) times that lowest best P@1: a
conclusion that holds at all of them does not hang on where the target fell. Times are training times and say their clock in the header
("virtual s": the virtual clock's seconds, which charge rows and merges, not evaluations or the
ranker; docs/devices.md); the last column is each run's wall time, everything included.
SLIDE's runs (--algo slide, one CPU device) are labelled "SLIDE (1 CPU)" and timed on the wall
clock (xmltrain refuses --clock for them): their speed-up is left out unless the baseline ran on
the wall clock too, and a note under the table says so.

Figures: by default time and megabatch, plus devices, mega-batch-size, batch-beta and
perturbation when the sweep varies their flags, and batch-trace when it holds a multi-device run;
they go to SWEEP_DIR/figures/ and the report (default SWEEP_DIR/report.md) links them. Figures
need matplotlib (see scripts/plot.py: $PYTHON or /usr/bin/python3 is used when the running
interpreter lacks it); --no-figures writes the tables alone with the standard library.
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (scripts/plot.py)
import sweep_index  # noqa: E402  (scripts/sweep_index.py: the sweep folder's files)
from speedup import METHOD, paired_ratios, speedup_text  # noqa: E402  (scripts/speedup.py)

FIGURE_FLAGS = {"devices": ("devices",), "mega-batch-size": ("mega-batch",), "batch-beta": ("batch", "beta"),
                "perturbation": ("pert-thr", "pert-delta")}


# ---------------------------------------------------------------------------------------------
# Numbers


def run_numbers(run, target):
    """The MLP's best P@1/P@3/P@5 over the run's evaluations, the final model's P@1, and the time
    and mega-batches to the target."""
    evaluated = [r for r in plot.records_of(run) if "p1" in r]
    if not evaluated:
        return None
    reached = sweep_index.first_reaching(evaluated, target) if target is not None else None
    return {"p1": max(r["p1"] for r in evaluated), "p3": max(r["p3"] for r in evaluated),
            "p5": max(r["p5"] for r in evaluated),
            # The index keeps the summary's p1 as final_p1 (p1 before): the final model's, with the
            # ranker no evaluation saw.
            "final_p1": next((run[k] for k in ("final_p1", "p1") if run.get(k) is not None), evaluated[-1]["p1"]),
            "final_model": run.get("final_model", "MLP + ranker" if "mlp_best_p1" in run else "MLP"),
            "train_time_s": evaluated[-1]["train_time_s"],
            "time": reached["train_time_s"] if reached else None,
            "megabatches": reached["megabatch"] if reached else None,
            "perturbations": sum(1 for r in plot.records_of(run) if r.get("perturbed")),
            "wall_s": run.get("wall_s"),
            # Propensity-scored precision, where the run computed it (it had a test set).
            "psp1": max((r["psp1"] for r in evaluated if "psp1" in r), default=None),
            "psp5": max((r["psp5"] for r in evaluated if "psp5" in r), default=None)}


def mean_and_spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def summarize_configuration(members, target):
    numbers = [n for n in (run_numbers(r, target) for r in members) if n]
    by_seed = {str(r["flags"].get("seed")): run_numbers(r, target) for r in members}
    row = {"seeds": len(numbers), "reached": sum(1 for n in numbers if n["time"] is not None),
           "final_model": " / ".join(sorted({n["final_model"] for n in numbers})),
           # Each seed's time to target, to pair with the baseline's of the same seed.
           "times_by_seed": {seed: n["time"] for seed, n in by_seed.items() if n}}
    for key in ("p1", "p3", "p5", "final_p1", "time", "megabatches", "train_time_s", "perturbations", "psp1", "psp5",
                "wall_s"):
        row[key], row[key + "_sd"] = mean_and_spread([n[key] for n in numbers])
    return row


def default_target(runs, group_by, fraction):
    """fraction x the lowest mean best P@1 among the configurations."""
    bests = []
    for _, _, members in plot.configurations(runs, group_by):
        mean, _ = mean_and_spread([n["p1"] for n in (run_numbers(r, None) for r in members) if n])
        if mean is not None:
            bests.append(mean)
    return fraction * min(bests) if bests else None


def comparison_group(run, group_by):
    """The run's variant (unless the lines are grouped by it) and values of the swept flags other than
    the group-by flags and --algo: runs with equal ones are compared with each other."""
    swept = [(k, str(v)) for k, v in run.get("grid", {}).items() if k not in (*group_by, "algo", "variant")]
    if "variant" not in group_by and run.get("variant"):
        swept.append(("variant", run["variant"]))
    return tuple(sorted(swept))


def find_baseline(rows, group_by, baseline):
    """The baseline row of each comparison group: group-by value == baseline, else --algo == baseline."""
    chosen = {}
    for wanted in (lambda row: row["group"] == baseline,
                   lambda row: plot.flag_value(row["members"][0], "algo") == baseline):
        for row in rows:
            if wanted(row) and row["time"] is not None:
                chosen.setdefault(row["comparison"], row)
    return chosen


def several_targets(runs, group_by, baseline, fractions, lowest_best):
    """The speed-ups over the baseline at each of fractions x the lowest best P@1: a table whose
    rows are the configurations other than the baselines, one column per target."""
    columns = []
    for fraction in fractions:
        rows = []
        for group, detail, members in plot.configurations(runs, group_by):
            row = summarize_configuration(members, fraction * lowest_best)
            row.update(group=group, label=", ".join(p for p in (group, detail) if p), members=members,
                       comparison=comparison_group(members[0], group_by))
            rows.append(row)
        columns.append((fraction, rows, find_baseline(rows, group_by, baseline)))
    lines = ["| configuration | " + " | ".join(f"speed-up at {f:g} x {lowest_best:.4f} = {f * lowest_best:.4f}"
                                            for f, _, _ in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for i, row in enumerate(columns[0][1]):
        cells = []
        for _, rows, baselines in columns:
            this, base = rows[i], baselines.get(rows[i]["comparison"])
            if base is this:
                cells.append("baseline")
            elif base and same_clock(this, base):
                cells.append(speedup_text(paired_ratios(base["times_by_seed"], this["times_by_seed"])))
            elif this["reached"] == 0:
                cells.append("not reached")
            else:
                cells.append("-")
        if all(c == "baseline" for c in cells):
            continue
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return lines


# ---------------------------------------------------------------------------------------------
# Markdown


def number(value, spread=None, digits=4):
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text + (f" ± {spread:.{digits}f}" if spread else "")


def seconds(value, spread=None):
    if value is None:
        return "-"
    return f"{value:.3g}" + (f" ± {spread:.2g}" if spread else "")


def clock(row):
    """The clock of a configuration's times: SLIDE's is the wall clock whatever the flags say."""
    return plot.run_clock(row["members"][0])


def same_clock(row, base):
    return clock(row) == clock(base)


def slide_note(rows):
    """Under the table when SLIDE is in it: one CPU device against the others' devices, and its clock."""
    slide = [row for row in rows if all(map(plot.is_slide, row["members"]))]
    if not slide:
        return []
    others = sorted({str(plot.flag_value(r["members"][0], "devices")) for r in rows if r not in slide})
    clocks = sorted({clock(r) for r in rows if r not in slide})
    return [f"{plot.SLIDE_LABEL}: SLIDE's sampled output layer on one CPU device (its threads share the model), "
            f"against {', '.join(others) or 'no other runs'} for the others (as the paper's CPU curve against its "
            f"GPUs); its times are wall-clock seconds on this machine"
            + (f", the others' on the {' and '.join(clocks)} clock" if clocks else "") + ".", ""]


def models_note(rows):
    """What "MLP" and "final model" mean, under the table: two models, whose figures differ."""
    ranker = any("ranker" in row["final_model"] for row in rows)
    return ["MLP: the network's evaluations during training (the metrics files); the target, its time and the "
            "speed-up are the MLP's. Final model: what `xmltrain train` saves and `eval` scores"
            + (": with the default shortlist ranker, the MLP re-ranked by a linear model fitted after training, on "
               "the training rows but for a tenth held out to choose its blend, which the MLP did not train on either "
               "(`--ranker off` trains on every row and keeps the MLP alone)" if ranker else ": the MLP alone")
            + ".", ""]


def table(rows, baselines, multi_seed):
    # Best PSP@1 and PSP@5 (propensity-scored, the long tail's precision) when the runs have them.
    psp = any(row.get("psp1") is not None for row in rows)
    unit = plot.seconds_label([run for row in rows for run in row["members"]])
    lines = ["| configuration | seeds | MLP: best P@1 | MLP: best P@3 | MLP: best P@5 | " +
             ("MLP: best PSP@1 | MLP: best PSP@5 | " if psp else "") +
             f"final model | final model: P@1 | MLP: time to target ({unit}) | MLP: mega-batches to target | "
             f"speed-up (95% interval) | total time ({unit}) | wall s |",
             "|---|---|---|---|---|" + ("---|---|" if psp else "") + "---|---|---|---|---|---|---|"]
    for row in rows:
        base = baselines.get(row["comparison"])
        if base is row:
            speedup = "baseline"
        elif base and same_clock(row, base):
            speedup = speedup_text(paired_ratios(base["times_by_seed"], row["times_by_seed"]))
        else:
            speedup = "-"
        reached = "" if row["reached"] == row["seeds"] else f" ({row['reached']}/{row['seeds']} reached)"
        time_text = seconds(row["time"], row["time_sd"] if multi_seed else None) + reached
        if row["reached"] == 0:
            time_text = "not reached"
        mb = f"{row['megabatches']:.1f}".removesuffix(".0") if row["megabatches"] is not None else "-"
        psp_cells = f"{number(row.get('psp1'))} | {number(row.get('psp5'))} | " if psp else ""
        lines.append(f"| {row['label']} | {row['seeds']} | {number(row['p1'], row['p1_sd'])} | {number(row['p3'])} | "
                     f"{number(row['p5'])} | {psp_cells}{row['final_model']} | {number(row['final_p1'])} | {time_text} | {mb} | "
                     f"{speedup} | "
                     f"{seconds(row['train_time_s'])} | {seconds(row['wall_s'])} |")
    return lines


def header(study, folder, runs, target, target_text):
    lines = [f"# {study.get('name') or Path(folder).resolve().name}", ""]
    if study.get("dataset") or study.get("data"):
        lines.append(f"- data: {study.get('dataset') or study['data'].get('train')}")
    if study.get("fixed"):
        lines.append("- fixed: " + " ".join(f"--{k} {v}" for k, v in study["fixed"].items()))
    if study.get("grid"):
        lines.append("- grid: " + "; ".join(f"{k} = {', '.join(map(str, v))}" for k, v in study["grid"].items()))
    for variant in study.get("variants", []):
        lines.append(f"- variant {variant['name']}: " + " ".join(f"--{k} {v}" for k, v in variant["flags"].items()))
    if study.get("seeds"):
        lines.append(f"- seeds: {', '.join(map(str, study['seeds']))}")
    lines.append(f"- runs: {sum(1 for r in runs if r.get('status') == 'ok')} finished, "
                 f"{sum(1 for r in runs if r.get('status') != 'ok')} failed")
    lines.append(f"- target P@1: {target:.4f} ({target_text})" if target is not None else "- target P@1: none")
    return lines + [""]


def failures(runs):
    failed = [r for r in runs if r.get("status") != "ok"]
    if not failed:
        return []
    lines = ["## Failed runs", ""]
    for run in failed:
        last = (run.get("error") or "").splitlines()[-1:] or [""]
        lines.append(f"- `{run['id']}` ({plot.format_flags(run.get('grid', {}).items())}, "
                     f"seed {run['flags'].get('seed')}): exit {run.get('exit_code')}: {last[0]}")
    return lines + [""]


def figure_kinds(runs, requested):
    if requested is not None:
        return requested
    varying = set(plot.varying_flags(runs))
    kinds = ["time", "megabatch"]
    kinds += [kind for kind, flags in FIGURE_FLAGS.items() if varying & set(flags)]
    if any(len((plot.records_of(r) or [{}])[0].get("devices", [])) > 1 for r in runs):
        kinds.append("batch-trace")
    return kinds


def figures(runs, folder, kinds, group_by, out_dir, target):
    """Makes the figures, the target P@1 marked on them, and returns the markdown that shows them."""
    lines = ["## Figures", ""]
    for kind in kinds:
        path = Path(folder) / "figures" / f"{kind}.png"
        lines_group = group_by if kind in ("time", "megabatch") else None
        plot.make_figure(runs, kind, path, lines_group, target=target)
        lines += [f"![{kind}]({os.path.relpath(path, out_dir)})", ""]
    return lines


# ---------------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("study", help="a sweep's folder (or its index.jsonl)")
    parser.add_argument("--target", type=float, help="P@1 to reach")
    parser.add_argument("--target-fraction", type=float, default=0.95)
    parser.add_argument("--fractions", default="0.8,0.9,0.95,0.98",
                        help="the second table's targets, as fractions of the lowest best P@1 ('' for none)")
    parser.add_argument("--group-by", help="flag(s) naming the compared lines (default: variant, or algo)")
    parser.add_argument("--baseline", default="elastic", help="the group-by value (or --algo) of the baseline")
    parser.add_argument("--figures", help="figure kinds, comma separated (default: chosen from what varies)")
    parser.add_argument("--no-figures", action="store_true")
    parser.add_argument("--out", type=Path, help="the report (default SWEEP_DIR/report.md)")
    args = parser.parse_args(argv)
    try:
        args.fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    except ValueError:
        parser.error(f"--fractions must be numbers separated by commas, not {args.fractions!r}")
    if any(not 0 < f <= 1 for f in args.fractions):
        parser.error("--fractions must be in (0, 1]")
    if args.figures:
        unknown = set(args.figures.split(",")) - set(plot.KINDS)
        if unknown:
            parser.error(f"unknown figure kinds {sorted(unknown)}; kinds: {', '.join(plot.KINDS)}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not args.no_figures:
        plot.ensure_matplotlib()
    folder = sweep_index.index_path(args.study).parent
    all_runs = plot.load_index(args.study)
    runs = plot.select(all_runs, [])
    if not runs:
        sys.exit(f"report: no finished runs in {sweep_index.index_path(args.study)}")
    group_by = args.group_by.split(",") if args.group_by else plot.default_group_by(runs)
    target, target_text = args.target, "given"
    if target is None:
        target = default_target(runs, group_by, args.target_fraction)
        target_text = f"{args.target_fraction} x the lowest best P@1"
    rows = []
    for group, detail, members in plot.configurations(runs, group_by):
        row = summarize_configuration(members, target)
        row.update(group=group, label=", ".join(p for p in (group, detail) if p), members=members,
                   comparison=comparison_group(members[0], group_by))
        rows.append(row)
    rows.sort(key=lambda row: row["comparison"])  # stable: index order within a group
    baselines = find_baseline(rows, group_by, args.baseline)
    out = args.out or folder / "report.md"
    lines = header(sweep_index.read_study(folder), folder, all_runs, target, target_text)
    lines += ["## Results", ""] + table(rows, baselines, any(r["seeds"] > 1 for r in rows)) + [""]
    lines += slide_note(rows) + models_note(rows)
    if baselines:
        lines += [f"Speed-up: {METHOD}; within each group of equal swept flags; baselines: "
                  + "; ".join(sorted({b["label"] for b in baselines.values()})) + ".", ""]
    else:
        lines += [f"Speed-up: no {args.baseline} run reached the target, so there is none.", ""]
    lowest_best = default_target(runs, group_by, 1.0)
    if args.fractions and baselines and lowest_best:
        lines += ["## Speed-up at several targets", "",
                  "The same speed-ups over the baseline at several targets, fractions of the lowest best P@1: "
                  "the lower ones fall where the curves still rise fast, the higher ones near their plateau.", ""]
        lines += several_targets(runs, group_by, args.baseline, args.fractions, lowest_best) + [""]
    lines += failures(all_runs)
    if not args.no_figures:
        kinds = figure_kinds(runs, args.figures.split(",") if args.figures else None)
        lines += figures(runs, folder, kinds, group_by, out.parent, target)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
