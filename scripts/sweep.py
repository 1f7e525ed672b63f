#!/usr/bin/env python3
"""Runs a grid of `xmltrain train` runs, resumably and in parallel, and indexes their results.

Usage:
  scripts/sweep.py --out OUT (--dataset NAME | --train F [--test F]) [--config STUDY.toml]
                   [--grid FLAG=V1,V2 ...] [--fixed FLAG=VALUE ...] [--seeds 1,2,3]
                   [--target P1] [-j N] [--threads N] [--xmltrain PATH] [--timeout S] [--dry-run]
                   [--reuse OTHER_SWEEP_DIR ...]

  scripts/sweep.py --out sweeps/ab --dataset bibtex --grid algo=adaptive,elastic --grid beta=8,16 \
      --fixed epochs=20 --fixed devices=cpu:4 --fixed speed=1,1.1,1.2,1.32 --seeds 1,2 -j 2
  scripts/sweep.py --out sweeps/algorithms --config scripts/experiments/algorithms.toml

Flags are `xmltrain train` flags without their dashes (checked against `xmltrain train --help`;
`pert_thr` is read as `pert-thr`). `--grid` values are split on commas, or on '|' when the list
holds one (`--grid 'speed=1,1,1,1|1,1.1,1.2,1.32'`); `--fixed` values are never split. Switches
take true/false (`--fixed no-cache=true`). The flags the sweep sets itself (train, test, the
label files, seed, metrics, model) cannot be swept: use --dataset/--train/--test and --seeds.

A TOML study file (tomllib) may hold, at its top level, `name`, `dataset` (or `train`, `test`,
`train-labels`, `test-labels`), `seeds` (a list), `target`, and the tables:
  [fixed]      flag = value              flags of every run
  [grid]       flag = [v1, v2, ...]      the product of these lists
  [[variant]]  name = "..." + flags      named flag sets that are not a product (e.g. per algorithm);
                                         each is crossed with the grid, and overrides [fixed]
Options given on the command line override the file's (a --fixed or --grid flag replaces the
file's entry for that flag). A flag may not be both in the grid and in a variant.

SLIDE (algo = slide) trains on one CPU device: its runs leave out the [fixed] and --fixed flags
that only several devices take (ONE_DEVICE_DROPS: devices, speed, clock, row-cost, ...), which
xmltrain refuses for it, so that one study holds it beside the multi-device algorithms; its times
are then wall-clock seconds on this machine, not the virtual clock's. In the same way, the flags
that a run's algorithm never reads (--batch-min and --beta without dynamic dispatch; --pert-thr,
--pert-delta and --pert-weights without the normalized merge; --elastic-alpha without the average
or crossbow merge; all of them for single and slide), which xmltrain refuses, are left out of its
runs when they come from [fixed] or the grid: `--grid algo=adaptive,elastic --grid beta=4,8,16`
runs elastic once per seed, not three times. The sweep says so on stderr, --dry-run included; a
variant that gives such a flag itself is a usage error.

Runs: variants x grid x seeds. Each run's id is a hash of its data and flags (seed included); it
writes OUT/runs/ID.jsonl (--metrics) and OUT/runs/ID.log (stdout and stderr). OUT/index.jsonl
gets one line per finished run: id, status ("ok" or "failed"), variant, grid (the swept flags),
flags, and for ok runs the summary: the MLP's figures, mlp_best_p1 and mlp_best_megabatch (the
best of its evaluations during training) and mlp_last_p1 (its last), beside the final model's,
final_p1/final_p3/final_p5, with final_model saying what that model is ("MLP + ranker" with the
default shortlist ranker, "MLP" with --ranker off) and ranker_holdout_rows how many training rows
the ranker held out of training (a tenth by default; 0 with --ranker off); train_time_s,
megabatches, evaluations, perturbations (evaluations whose metrics say `perturbed`), and with
--target, time_to_target_s and megabatches_to_target (null when not reached); for failed runs,
exit_code and error (the log's tail). Runs already in the index as ok are skipped; failed ones
run again. Later lines for an id replace earlier ones; the index is compacted, in the study's
order, at the start and at the end of each invocation.

--dataset NAME reads $XMLT_DATA_DIR/NAME/{train,test}.txt ($XMLT_DATA_DIR defaults to
../shared/data beside the repository). --xmltrain defaults to $XMLT_BUILD_DIR/apps/xmltrain
($XMLT_BUILD_DIR defaults to build, in the repository). --threads N is passed as xmltrain's global
--threads (default: the cores divided by -j); it is recorded in the index but is not part of the id.

--reuse DIR (repeatable) takes a pending run from another sweep instead of running it again, when
DIR's index holds the same id (same data and flags, seed included) as ok: its metrics and log are
copied into OUT/runs/ and its index line gets this study's variant and grid. Studies that share a
configuration (e.g. the default point of a beta sweep and of a perturbation sweep) then train it
once.

Progress goes to stderr, one line per finished run, with the time elapsed and an estimate of the
time left (the mean wall time per finished run so far, times the runs to go). Exit codes: 0 all runs ok, 1 some run failed,
2 bad usage (unknown flag, malformed grid, missing data or binary, bad study file, or every run
refused by xmltrain with its own usage error, e.g. --hidden 0).
Python 3.11 standard library only.
"""
import argparse
import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_index  # noqa: E402  (scripts/sweep_index.py: the sweep folder's files)
from sweep_runs import Runner, refresh_targets, reuse_runs, run_all, train_command  # noqa: E402
from sweep_study import REPO, UsageError, check_study, expand_runs, load_study_file  # noqa: E402
from sweep_study import left_out_notes, merge_command_line, read_train_flags, resolve_data  # noqa: E402

# ---------------------------------------------------------------------------------------------
# The index, in the study's order, and what the study asked


def in_study_order(records, runs):
    """The records of the study's runs in the study's order (variants, grid, seeds), then any others."""
    ordered = {r["id"]: records[r["id"]] for r in runs if r["id"] in records}
    ordered.update((i, record) for i, record in records.items() if i not in ordered)
    return ordered


def write_study(out, study, data, command_line):
    """OUT/study.json: what was asked, for the report."""
    description = {"name": study["name"] or out.resolve().name, "dataset": study["dataset"],
                   "data": {k: str(v) for k, v in data.items()}, "fixed": study["fixed"],
                   "grid": study["grid"], "variants": [{"name": n, "flags": f} for n, f in study["variants"] if n],
                   "seeds": study["seeds"], "target": study["target"], "command": command_line}
    sweep_index.write_study(out, description)


# ---------------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--out", required=True, type=Path, help="output folder (index.jsonl, runs/)")
    parser.add_argument("--config", type=Path, help="TOML study file ([fixed], [grid], [[variant]])")
    parser.add_argument("--grid", action="append", default=[], metavar="FLAG=V1,V2", help="swept flag")
    parser.add_argument("--fixed", action="append", default=[], metavar="FLAG=VALUE", help="flag of every run")
    parser.add_argument("--seeds", help="seeds, e.g. 1,2,3 (default 1)")
    parser.add_argument("--target", type=float, help="P@1 to reach: the index gets the time to reach it")
    parser.add_argument("--name", help="the study's name (default: the file's name, or OUT's)")
    parser.add_argument("--dataset", help="NAME: $XMLT_DATA_DIR/NAME/train.txt and test.txt")
    parser.add_argument("--train", help="training data")
    parser.add_argument("--test", help="test data")
    parser.add_argument("--train-labels", help="labels file of a split-pair training file")
    parser.add_argument("--test-labels", help="labels file of a split-pair test file")
    parser.add_argument("--xmltrain", help="the xmltrain binary (default $XMLT_BUILD_DIR/apps/xmltrain)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="runs at once (default 1)")
    parser.add_argument("--threads", type=int, help="xmltrain --threads per run (default: cores / jobs)")
    parser.add_argument("--timeout", type=float, help="seconds after which a run is killed and failed")
    parser.add_argument("--dry-run", action="store_true", help="print the commands of the pending runs")
    parser.add_argument("--reuse", action="append", default=[], type=Path, metavar="SWEEP_DIR",
                        help="take pending runs that this other sweep finished (same id) from it (repeatable)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    if args.threads is not None and args.threads < 0:
        parser.error("--threads must be at least 0")
    return args


def default_xmltrain():
    return str(REPO / os.environ.get("XMLT_BUILD_DIR", "build") / "apps" / "xmltrain")


def prepare(args):
    """Reads and checks everything; returns (study, data, runs, xmltrain)."""
    xmltrain = args.xmltrain or default_xmltrain()
    if not (Path(xmltrain).is_file() and os.access(xmltrain, os.X_OK)):
        raise UsageError(f"{xmltrain}: no xmltrain binary there (build it, or pass --xmltrain PATH)")
    study = {"name": None, "dataset": None, "data": {}, "seeds": None, "target": None,
             "fixed": {}, "grid": {}, "variants": []}
    if args.config:
        study = load_study_file(args.config)
        study["name"] = study["name"] or args.config.stem
    study = merge_command_line(study, args)
    study = check_study(study, read_train_flags(xmltrain))
    data, identity = resolve_data(study)
    return study, data, expand_runs(study, identity), xmltrain


def main(argv=None):
    args = parse_args(argv)
    try:
        study, data, runs, xmltrain = prepare(args)
    except UsageError as e:
        print(f"sweep: {e}", file=sys.stderr)
        return 2
    runs_dir = sweep_index.runs_folder(args.out)
    index_path = sweep_index.index_file(args.out)
    records = sweep_index.read_index(index_path, skip_malformed_as="sweep")
    if not args.dry_run:
        runs_dir.mkdir(parents=True, exist_ok=True)
        refresh_targets(records, runs_dir, study["target"])
        sweep_index.write_index(index_path, in_study_order(records, runs))
    pending = [r for r in runs if records.get(r["id"], {}).get("status") != "ok"]
    reused = {} if args.dry_run else reuse_runs(pending, args.reuse, runs_dir, study["target"])
    if reused:
        records.update(reused)
        sweep_index.write_index(index_path, in_study_order(records, runs))
        pending = [r for r in pending if r["id"] not in reused]
    threads = args.threads if args.threads is not None else max(1, (os.cpu_count() or 1) // args.jobs)
    skipped = len(runs) - len(pending)
    for note in left_out_notes(study, runs):
        print(f"sweep: {note}", file=sys.stderr)
    print(f"sweep: {len(runs)} runs, {skipped} already done" + (f" ({len(reused)} from --reuse)" if reused else "")
          + f", {len(pending)} to run"
          + (f", {args.jobs} at a time" if pending else ""), file=sys.stderr)
    if args.dry_run:
        for run in pending:
            metrics = sweep_index.metrics_file(runs_dir, run["id"])
            print(shlex.join(train_command(xmltrain, threads, data, run["flags"], metrics)))
        return 0
    write_study(args.out, study, data, sys.argv)
    runner = Runner(xmltrain, threads, data, runs_dir, args.timeout)
    try:
        failures = run_all(pending, runner, index_path, records, args.jobs, study["target"])
    except KeyboardInterrupt:
        print("sweep: interrupted; finished runs are in the index", file=sys.stderr)
        return 130
    sweep_index.write_index(index_path, in_study_order(records, runs))
    if not failures:
        return 0
    print(f"sweep: {len(failures)} of {len(pending)} runs failed (see their logs in {runs_dir}); "
          "run the sweep again to retry them", file=sys.stderr)
    # Every run refused its flags: a usage error rather than failed training.
    return 2 if len(failures) == len(pending) and all(f["exit_code"] == 2 for f in failures) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. --dry-run | head
        sys.stderr.close()
        sys.exit(0)
