#!/usr/bin/env python3
"""PNG figures from a sweep (scripts/sweep.py) or from xmltrain metrics files, one kind per figure
of the Adaptive SGD paper's section 5.

Usage:
  scripts/plot.py SWEEP_DIR|INDEX.jsonl --kind KIND [--group-by FLAG[,FLAG]] [--x time|megabatch|epoch]
                  [--metric p1] [--where FLAG=VALUE ...] [--run ID] [--out FILE.png] [--title TEXT]
                  [--target P1]
  scripts/plot.py --metrics NAME=RUN.jsonl ... --kind KIND [--out FILE.png]

Kinds (the paper's figure; x axis and line grouping by default):
  time             Fig. 6   P@1 against training time, a line per algorithm
  megabatch        Fig. 7   P@1 against mega-batches, a line per algorithm
  devices          Fig. 8   P@1 against time, a line per --devices
  mega-batch-size  Fig. 9   P@1 against time, a line per --mega-batch
  batch-beta       Fig. 10  P@1 against time, a line per --batch and --beta (the initial batch is b_max)
  perturbation     Fig. 11  P@1 against time, a line per --pert-thr and --pert-delta
  batch-trace      Fig. 12  one run: each device's batch size over mega-batches, and the
                            evaluations at which the last merge was perturbed

The default lines are the algorithms: --algo when the grid sweeps it, else the variant's name
when the sweep has variants, else --algo. --target draws the target P@1 (scripts/report.py marks
its own). Runs that differ only by seed are averaged (the line is
the mean, the band spans min..max); runs that differ by a flag outside --group-by get lines of
their own (same colour, another line style); --where keeps only the runs with the given flag
values ('variant' and 'algo' work too). batch-trace plots --run (an id or its prefix), else the
first multi-device dynamic-dispatch run of the index.
The figure goes to --out, by default SWEEP_DIR/figures/KIND.png (./KIND.png with --metrics).
The time axis names its clock ("training time (virtual s)"): a sweep's flags say it; metrics files
do not, so --clock gives it (default: virtual where the files list several devices, else wall).

Needs matplotlib (Debian: python3-matplotlib, which scripts/setup.sh installs). When the running
interpreter lacks it, the script runs itself again under $PYTHON or /usr/bin/python3 if one of
those has it.
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_index  # noqa: E402  (scripts/sweep_index.py: the sweep folder's files)

KINDS = {
    "time": {"x": "time", "group_by": None, "title": "Time to accuracy"},
    "megabatch": {"x": "megabatch", "group_by": None, "title": "Statistical efficiency"},
    "devices": {"x": "time", "group_by": "devices", "title": "Devices"},
    "mega-batch-size": {"x": "time", "group_by": "mega-batch", "title": "Mega-batch size"},
    "batch-beta": {"x": "time", "group_by": "batch,beta", "title": "Initial batch and beta"},
    "perturbation": {"x": "time", "group_by": "pert-thr,pert-delta", "title": "Perturbation"},
    "batch-trace": {"x": "megabatch", "group_by": None, "title": "Batch sizes and perturbation"},
}
X_FIELDS = {"time": ("train_time_s", "training time"), "megabatch": ("megabatch", "mega-batch"),
            "epoch": ("epoch", "epoch")}
METRICS = ("p1", "p3", "p5", "ndcg3", "ndcg5", "psp1", "psp3", "psp5", "psndcg3", "psndcg5", "loss")


def metric_label(metric):
    """p1 -> P@1, ndcg3 -> nDCG@3, psp5 -> PSP@5, psndcg3 -> PSnDCG@3; loss as it is."""
    for prefix, name in (("psndcg", "PSnDCG@"), ("psp", "PSP@"), ("ndcg", "nDCG@"), ("p", "P@")):
        if metric.startswith(prefix) and metric[len(prefix):].isdigit():
            return name + metric[len(prefix):]
    return metric
FIGURE_SIZE = (6, 4)
DPI = 100
LINE_STYLES = ("-", "--", ":", "-.")
SHORT_FLAGS = ("algo", "variant")  # labelled by their value alone
# SLIDE (--algo slide) trains on one CPU device, the others on several, as in the paper's figures
# (its CPU curve against the GPUs): its line says so, and keeps one colour and style in every figure.
SLIDE_LABEL = "SLIDE (1 CPU)"
SLIDE_COLOUR, SLIDE_STYLE = "black", "-."


# ---------------------------------------------------------------------------------------------
# matplotlib


def ensure_matplotlib():
    """Imports matplotlib with the Agg backend, or runs this program again under an interpreter that
    has it ($PYTHON, then /usr/bin/python3), or exits with a message."""
    try:
        import matplotlib
    except ImportError:
        if not os.environ.get("XMLT_PLOT_REEXEC"):
            for candidate in (os.environ.get("PYTHON"), "/usr/bin/python3"):
                if candidate and os.access(candidate, os.X_OK) and os.path.realpath(candidate) != os.path.realpath(sys.executable):
                    os.environ["XMLT_PLOT_REEXEC"] = "1"
                    os.execv(candidate, [candidate, os.path.abspath(sys.argv[0])] + sys.argv[1:])
        sys.exit(f"{Path(sys.argv[0]).name}: matplotlib is missing from {sys.executable}: install python3-matplotlib "
                 "(scripts/setup.sh) or set PYTHON to an interpreter that has it")
    matplotlib.use("Agg")


def pyplot():
    import matplotlib.pyplot as plt
    return plt


# ---------------------------------------------------------------------------------------------
# Runs: from a sweep's index, or from metrics files


def load_index(study):
    """The runs of a sweep, the last line of each id winning; each gets 'metrics' (its file)."""
    path = sweep_index.index_path(study)
    if not path.exists():
        sys.exit(f"plot: {path} not found (run scripts/sweep.py first)")
    runs = []
    for record in sweep_index.read_index(path).values():
        record["metrics"] = sweep_index.metrics_file(sweep_index.runs_folder(path.parent), record["id"])
        runs.append(record)
    return runs


def load_metrics_files(items, clock=None):
    """Runs from NAME=FILE arguments: the name becomes the run's variant; `clock` (virtual or wall)
    is their times' clock, which the files do not say (None: run_clock guesses it)."""
    runs = []
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = Path(item).stem, item
        runs.append({"id": name, "status": "ok", "variant": name, "grid": {"variant": name},
                     "flags": {}, "metrics": Path(path), **({"clock": clock} if clock else {})})
    return runs


def run_clock(run):
    """The clock of a run's times, "virtual" or "wall": SLIDE and single train on the wall clock
    (they refuse --clock), the other algorithms on --clock (virtual by default). A metrics file
    given alone has no flags: its clock is the one given for it, else virtual when its evaluations
    list several devices (xmltrain's default for them) and wall when they list one."""
    if is_slide(run):
        return "wall"
    if run["flags"]:
        return "wall" if run["flags"].get("algo", "single") == "single" else run["flags"].get("clock", "virtual")
    if run.get("clock"):
        return run["clock"]
    first = next(iter(records_of(run)), {})
    return "virtual" if len(first.get("devices", [])) > 1 else "wall"


def seconds_label(runs):
    """'virtual s', 'wall s', or for a mix the virtual seconds with the wall-clock runs named."""
    clocks = {run_clock(r) for r in runs}
    if len(clocks) == 1:
        return f"{clocks.pop()} s"
    wall = sorted({SLIDE_LABEL.split(" ")[0] if is_slide(r) else str(flag_value(r, "variant"))
                   for r in runs if run_clock(r) == "wall"})
    return f"virtual s; {', '.join(wall)}: wall clock"


def records_of(run):
    """The run's evaluations (metrics lines), read once."""
    if "records" not in run:
        try:
            run["records"] = sweep_index.read_jsonl(run["metrics"])
        except OSError:
            print(f"plot: {run['metrics']} is missing; run {run['id']} left out", file=sys.stderr)
            run["records"] = []
    return run["records"]


def flag_value(run, flag):
    if flag == "variant":
        return run.get("variant") or run["flags"].get("algo", "single")
    if flag == "algo":
        return run["flags"].get("algo", "single")
    return run["flags"].get(flag, "default")


def varying_flags(runs):
    """Flags (and 'variant') whose values differ among the runs, seed excepted, in a stable order."""
    names = []
    for run in runs:
        for flag in ["variant", *run["flags"]]:
            if flag != "seed" and flag not in names:
                names.append(flag)
    return [f for f in names if len({str(flag_value(r, f)) for r in runs}) > 1]


def default_group_by(runs):
    """The algorithm: --algo when the grid sweeps it, else the variant when runs have variants, else --algo."""
    if any("algo" in r.get("grid", {}) for r in runs):
        return ["algo"]
    return ["variant"] if any(r.get("variant") for r in runs) else ["algo"]


def parse_group_by(text, runs, kind):
    text = text or KINDS[kind]["group_by"]
    return text.split(",") if text else default_group_by(runs)


def select(runs, where):
    """The ok runs matching every FLAG=VALUE of where."""
    chosen = [r for r in runs if r.get("status") == "ok"]
    for condition in where:
        flag, _, value = condition.partition("=")
        chosen = [r for r in chosen if str(flag_value(r, flag)) == value]
    return chosen


def format_flags(flags_values):
    return ", ".join((SLIDE_LABEL if str(v) == "slide" else str(v)) if f in SHORT_FLAGS else f"{f}={v}"
                     for f, v in flags_values)


def is_slide(run):
    """An --algo slide run, or a metrics file named slide (time_to_accuracy.py's and demo's NAME=FILE)."""
    return run["flags"].get("algo") == "slide" or run.get("variant") == "slide"


def configurations(runs, group_by):
    """Groups runs that differ only by seed: [(group label, detail label, [runs])], in index order.
    The group label names the group-by flags' values; the detail the flags that still differ within
    a group (flags that a group's value decides, such as a variant's own flags, are left out)."""
    def group_of(run):
        return format_flags((f, flag_value(run, f)) for f in group_by)
    groups = {}
    for run in runs:
        groups.setdefault(group_of(run), []).append(run)
    others = [f for f in varying_flags(runs) if f not in group_by
              and any(len({str(flag_value(r, f)) for r in members}) > 1 for members in groups.values())]
    if "variant" in others:
        # The variant's name stands for its own flags (e.g. a variant "4 devices" for --devices cpu:4).
        by_variant = {}
        for run in runs:
            by_variant.setdefault((group_of(run), flag_value(run, "variant")), []).append(run)
        others = [f for f in others if f == "variant" or any(len({str(flag_value(r, f)) for r in members}) > 1
                                                             for members in by_variant.values())]
    configs = {}
    for run in runs:
        detail = format_flags((f, flag_value(run, f)) for f in others)
        configs.setdefault((group_of(run), detail), []).append(run)
    return [(group, detail, members) for (group, detail), members in configs.items()]


# ---------------------------------------------------------------------------------------------
# Curves


def mean_curve(runs, x_field, metric):
    """(x, mean y, min y, max y) over the runs' evaluations, aligned by evaluation number."""
    series = []
    for run in runs:
        evaluated = [r for r in records_of(run) if metric in r and x_field in r]
        if evaluated:
            series.append(evaluated)
    if not series:
        return [], [], [], []
    length = min(len(s) for s in series)
    xs = [statistics.fmean(s[i][x_field] for s in series) for i in range(length)]
    ys = [[s[i][metric] for s in series] for i in range(length)]
    return xs, [statistics.fmean(y) for y in ys], [min(y) for y in ys], [max(y) for y in ys]


def x_label(runs, x):
    """The x axis; time says its clock: "training time (virtual s)"."""
    field, label = X_FIELDS[x]
    return f"{label} ({seconds_label(runs)})" if x == "time" else label


def plot_lines(runs, kind, out, group_by=None, x=None, metric="p1", title=None, target=None):
    """One line per configuration, coloured by its group, and the target P@1 a dotted grey line
    when given; returns the figure's path."""
    plt = pyplot()
    group_by = group_by or parse_group_by(None, runs, kind)
    x = x or KINDS[kind]["x"]
    fig, ax = plt.subplots(figsize=FIGURE_SIZE, dpi=DPI)
    colours, styles = {}, {}
    seeds = 1
    for group, detail, members in configurations(runs, group_by):
        xs, ys, lows, highs = mean_curve(members, X_FIELDS[x][0], metric)
        if not xs:
            continue
        if all(map(is_slide, members)):
            colour, style = SLIDE_COLOUR, SLIDE_STYLE
        else:
            colour = colours.setdefault(group, f"C{len(colours) % 10}")
            style = styles.setdefault(detail, LINE_STYLES[len(styles) % len(LINE_STYLES)])
        label = ", ".join(p for p in (group, detail) if p)
        ax.plot(xs, ys, style, color=colour, label=label, linewidth=1.4)
        if len(members) > 1:
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.15, linewidth=0)
            seeds = max(seeds, len(members))
    if target is not None and metric == "p1":
        ax.axhline(target, color="grey", linestyle=":", linewidth=1, label=f"target P@1 {target:.3f}")
    ax.set_xlabel(x_label(runs, x))
    ax.set_ylabel(metric_label(metric))
    heading = title or KINDS[kind]["title"]
    ax.set_title(heading + (f" (mean of {seeds} seeds)" if seeds > 1 else ""), fontsize=10)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    return save(fig, out)


def trace_run(runs, wanted):
    """The run to trace: the one whose id starts with wanted, else the first multi-device run with
    dynamic dispatch (adaptive), else the first multi-device run."""
    if wanted:
        matches = [r for r in runs if r["id"].startswith(wanted)]
        if len(matches) != 1:
            sys.exit(f"plot: --run {wanted} matches {len(matches)} runs")
        return matches[0]
    multi = [r for r in runs if len((records_of(r) or [{}])[0].get("devices", [])) > 1]
    dynamic = [r for r in multi if r["flags"].get("schedule", "dynamic" if r["flags"].get("algo") == "adaptive"
                                                      else "static") == "dynamic"]
    if not (dynamic or multi):
        sys.exit("plot: no run with several devices to trace")
    return (dynamic or multi)[0]


def plot_batch_trace(run, out, title=None):
    """Each device's batch size after every evaluation, and the evaluations whose merge was perturbed."""
    plt = pyplot()
    records = [r for r in records_of(run) if r.get("devices")]
    if not records:
        sys.exit(f"plot: run {run['id']} has no per-device metrics")
    megabatches = [r["megabatch"] for r in records]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(FIGURE_SIZE[0], FIGURE_SIZE[1] + 1), dpi=DPI,
                                      gridspec_kw={"height_ratios": [3, 1]})
    for i, device in enumerate(records[0]["devices"]):
        sizes = [r["devices"][i]["batch"] if i < len(r["devices"]) else None for r in records]
        top.plot(megabatches, sizes, drawstyle="steps-post", label=device.get("id", f"device {i}"), linewidth=1.2)
    top.set_ylabel("batch size (rows)")
    top.grid(alpha=0.3)
    top.legend(fontsize=7, loc="best")
    perturbed = [1 if r.get("perturbed") else 0 for r in records]
    bottom.bar(megabatches, perturbed, width=0.8, color="C3")
    bottom.set_yticks([0, 1], ["no", "yes"])
    bottom.set_ylabel("perturbed")
    bottom.set_xlabel("mega-batch")
    algo = run["flags"].get("algo", "single")
    name = f"{run['variant']} ({algo})" if run.get("variant") and run["variant"] != algo else algo
    name += f", seed {run['flags']['seed']}" if "seed" in run["flags"] else ""
    fig.suptitle((title or f"{KINDS['batch-trace']['title']}: {name}")
                 + f"\nperturbed at {sum(perturbed)} of {len(records)} evaluations", fontsize=10)
    return save(fig, out)


def save(fig, out):
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out)
    pyplot().close(fig)
    return out


def make_figure(runs, kind, out, group_by=None, x=None, metric="p1", run_id=None, title=None, target=None):
    """The figure of one kind from the given runs (with the target P@1 marked when given); returns its path."""
    if not runs:
        sys.exit("plot: no finished runs to plot")
    if kind == "batch-trace":
        return plot_batch_trace(trace_run(runs, run_id), out, title)
    return plot_lines(runs, kind, out, group_by, x, metric, title, target)


# ---------------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("study", nargs="?", help="a sweep's folder or its index.jsonl")
    parser.add_argument("--metrics", action="append", default=[], metavar="NAME=FILE",
                        help="an xmltrain metrics file instead of a sweep (repeatable)")
    parser.add_argument("--clock", choices=("virtual", "wall"),
                        help="--metrics: the clock of the files' times (default: virtual for several devices)")
    parser.add_argument("--kind", required=True, choices=list(KINDS))
    parser.add_argument("--group-by", help="flag(s) whose values make the lines, comma separated")
    parser.add_argument("--x", choices=list(X_FIELDS), help="x axis (default: per kind)")
    parser.add_argument("--metric", choices=METRICS, default="p1")
    parser.add_argument("--where", action="append", default=[], metavar="FLAG=VALUE", help="keep matching runs")
    parser.add_argument("--run", help="batch-trace: the run's id (or a prefix)")
    parser.add_argument("--out", help="the PNG to write")
    parser.add_argument("--title")
    parser.add_argument("--target", type=float, help="a target P@1, drawn as a dotted line")
    args = parser.parse_args(argv)
    if bool(args.study) == bool(args.metrics):
        parser.error("give a sweep folder (or index) or --metrics files, not both")
    return args


def main(argv=None):
    args = parse_args(argv)
    ensure_matplotlib()
    runs = load_metrics_files(args.metrics, args.clock) if args.metrics else load_index(args.study)
    runs = select(runs, args.where)
    default_out = (sweep_index.index_path(args.study).parent / "figures" if args.study else Path(".")) / f"{args.kind}.png"
    group_by = parse_group_by(args.group_by, runs, args.kind)
    path = make_figure(runs, args.kind, args.out or default_out, group_by, args.x, args.metric, args.run, args.title,
                       args.target)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
