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
are then wall-clock seconds on this machine, not the virtual clock's.

Runs: variants x grid x seeds. Each run's id is a hash of its data and flags (seed included); it
writes OUT/runs/ID.jsonl (--metrics) and OUT/runs/ID.log (stdout and stderr). OUT/index.jsonl
gets one line per finished run: id, status ("ok" or "failed"), variant, grid (the swept flags),
flags, and for ok runs the summary: best_p1, best_megabatch, final p1/p3/p5, train_time_s,
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

Progress goes to stderr, one line per finished run. Exit codes: 0 all runs ok, 1 some run failed,
2 bad usage (unknown flag, malformed grid, missing data or binary, bad study file, or every run
refused by xmltrain with its own usage error, e.g. --hidden 0).
Python 3.11 standard library only.
"""
import argparse
import concurrent.futures
import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Flags the sweep sets itself for every run.
RESERVED = {"train", "test", "train-labels", "test-labels", "seed", "metrics", "model", "help"}
DATA_KEYS = ("train", "test", "train-labels", "test-labels")
STUDY_KEYS = {"name", "dataset", "seeds", "target", "fixed", "grid", "variant"} | set(DATA_KEYS)
ERROR_TAIL_LINES = 15
# The flags xmltrain refuses for --algo slide (one CPU device, apps/train_settings.cc), left out of
# its runs when they come from the study's fixed flags.
ONE_DEVICE_DROPS = ("devices", "speed", "hetero", "clock", "row-cost", "merge-cost", "batch-min", "beta", "momentum",
                    "pert-thr", "pert-delta", "pert-weights", "schedule", "merge", "collective", "momentum-mode",
                    "elastic-alpha", "lr-scaling", "preset")


class UsageError(Exception):
    """A problem with the sweep's arguments or study file (exit code 2)."""


# ---------------------------------------------------------------------------------------------
# The flags xmltrain train accepts


def read_train_flags(xmltrain):
    """Returns {flag: type} from `xmltrain train --help`; type is FLOAT, UINT, TEXT or SWITCH."""
    try:
        help_text = subprocess.run([xmltrain, "train", "--help"], capture_output=True, text=True,
                                   timeout=30).stdout
    except OSError as e:
        raise UsageError(f"cannot run {xmltrain}: {e.strerror}") from None
    flags = {}
    for line in help_text.splitlines():
        match = re.match(r"\s+(?:-\w,)?--([\w-]+)(?: ([A-Z]+)(?=[\s=]|$))?", line)
        if match and match.group(1) not in flags:  # the option list comes first; later lines are prose
            flags[match.group(1)] = match.group(2) or "SWITCH"
    if "epochs" not in flags:
        raise UsageError(f"{xmltrain} train --help lists no flags: is it xmltrain?")
    return flags


def normalize_key(key):
    """'--pert_thr' -> 'pert-thr'."""
    return key.strip().lstrip("-").replace("_", "-")


def normalize_value(flag, value, kind):
    """Returns the value as xmltrain will be given it: a string, or a bool for a switch."""
    if kind == "SWITCH":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("", "true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise UsageError(f"--{flag} is a switch: give true or false, not {value!r}")
    if isinstance(value, bool):
        raise UsageError(f"--{flag} takes a value, not {str(value).lower()}")
    text = str(value).strip()
    if text == "":
        raise UsageError(f"--{flag} has an empty value")
    try:
        if kind == "FLOAT":
            number = float(text)
            text = repr(number)[:-2] if repr(number).endswith(".0") else repr(number)
        elif kind == "UINT":
            number = float(text)
            if number < 0 or number != int(number):
                raise ValueError
            text = str(int(number))
    except ValueError:
        raise UsageError(f"--{flag} takes a {'number' if kind == 'FLOAT' else 'non-negative integer'}, "
                         f"not {value!r}") from None
    return text


def check_flag(flag, known):
    if flag in RESERVED:
        hint = "--seeds" if flag == "seed" else "--dataset/--train/--test" if flag in DATA_KEYS else "the sweep"
        raise UsageError(f"--{flag} is set by the sweep itself (use {hint})")
    if flag not in known:
        close = [k for k in known if k.startswith(flag[:3])]
        hint = f" (did you mean {', '.join('--' + k for k in close)}?)" if close else ""
        raise UsageError(f"unknown xmltrain train flag --{flag}{hint}")


# ---------------------------------------------------------------------------------------------
# The study: fixed flags, grid, variants, seeds, data


def parse_assignment(text, option):
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{option} {text!r}: expected FLAG=VALUE")
    return normalize_key(key), value


def split_grid_values(text):
    separator = "|" if "|" in text else ","
    values = [v.strip() for v in text.split(separator)]
    if any(v == "" for v in values):
        raise UsageError(f"--grid values {text!r} hold an empty entry")
    return values


def load_study_file(path):
    """Reads a TOML study file into the same shape as the command line's options."""
    try:
        import tomllib
    except ImportError:
        raise UsageError(f"reading {path} needs Python 3.11 or later (tomllib); this is {sys.version.split()[0]}") from None
    try:
        with open(path, "rb") as f:
            study = tomllib.load(f)
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: {e}") from None
    unknown = set(study) - STUDY_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown top-level keys {sorted(unknown)} (flags go in [fixed], [grid] "
                         f"or [[variant]])")
    fixed = {normalize_key(k): v for k, v in study.get("fixed", {}).items()}
    grid = {}
    for key, values in study.get("grid", {}).items():
        if not isinstance(values, list) or not values:
            raise UsageError(f"{path}: [grid] {key} must be a non-empty list")
        grid[normalize_key(key)] = values
    variants = []
    for i, table in enumerate(study.get("variant", [])):
        table = dict(table)
        name = table.pop("name", None)
        if not isinstance(name, str) or not name:
            raise UsageError(f"{path}: [[variant]] number {i + 1} has no name")
        variants.append((name, {normalize_key(k): v for k, v in table.items()}))
    seeds = study.get("seeds")
    if seeds is not None and (not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds)):
        raise UsageError(f"{path}: seeds must be a list of integers")
    data = {key: study[key] for key in DATA_KEYS if key in study}
    return {"name": study.get("name"), "dataset": study.get("dataset"), "data": data, "seeds": seeds,
            "target": study.get("target"), "fixed": fixed, "grid": grid, "variants": variants}


def merge_command_line(study, args):
    """Applies the command line's options over the study file's."""
    cli_fixed = dict(parse_assignment(t, "--fixed") for t in args.fixed)
    cli_grid = {}
    for text in args.grid:
        key, values = parse_assignment(text, "--grid")
        if key in cli_grid:
            raise UsageError(f"--grid {key} given twice")
        cli_grid[key] = split_grid_values(values)
    both = set(cli_fixed) & set(cli_grid)
    if both:
        raise UsageError(f"--{sorted(both)[0]} is both --fixed and --grid")
    for key in cli_fixed:
        study["grid"].pop(key, None)
    for key in cli_grid:
        study["fixed"].pop(key, None)
    study["fixed"].update(cli_fixed)
    study["grid"].update(cli_grid)
    if args.seeds is not None:
        study["seeds"] = parse_seeds(args.seeds)
    if args.target is not None:
        study["target"] = args.target
    if args.name:
        study["name"] = args.name
    if args.dataset or args.train:
        study["dataset"] = args.dataset
        study["data"] = {}
    for key in DATA_KEYS:
        value = getattr(args, key.replace("-", "_"))
        if value:
            study["data"][key] = value
    return study


def parse_seeds(text):
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise UsageError(f"--seeds {text!r}: expected integers separated by commas") from None
    if any(s < 0 for s in seeds):
        raise UsageError("--seeds must be non-negative")
    return seeds


def resolve_data(study):
    """Returns ({flag: path}, identity): the data files and what of them goes into run ids."""
    data = dict(study["data"])
    identity = {key: os.path.normpath(path) for key, path in data.items()}
    if study["dataset"]:
        # Ids name the dataset rather than its path, so that they hold on another machine.
        data_dir = Path(os.environ.get("XMLT_DATA_DIR", REPO.parent / "shared" / "data"))
        data.setdefault("train", str(data_dir / study["dataset"] / "train.txt"))
        test = data_dir / study["dataset"] / "test.txt"
        if "test" not in data and test.exists():
            data["test"] = str(test)
        identity["dataset"] = study["dataset"]
    if "train" not in data:
        raise UsageError("no training data: give --dataset NAME or --train FILE (or dataset/train in the study file)")
    for key, path in data.items():
        if not Path(path).exists():
            raise UsageError(f"--{key} {path}: no such file")
    return data, identity


def check_study(study, known):
    """Validates flag names and values; returns the study with values normalized."""
    fixed = {}
    for flag, value in study["fixed"].items():
        check_flag(flag, known)
        fixed[flag] = normalize_value(flag, value, known[flag])
    grid = {}
    for flag, values in study["grid"].items():
        check_flag(flag, known)
        normalized = [normalize_value(flag, v, known[flag]) for v in values]
        if len(set(map(str, normalized))) != len(normalized):
            raise UsageError(f"--grid {flag} repeats a value")
        grid[flag] = normalized
    variants, names = [], set()
    for name, flags in study["variants"]:
        if name in names:
            raise UsageError(f"two variants are named {name!r}")
        names.add(name)
        checked = {}
        for flag, value in flags.items():
            check_flag(flag, known)
            if flag in grid:
                raise UsageError(f"--{flag} is both in the grid and in variant {name!r}")
            checked[flag] = normalize_value(flag, value, known[flag])
        variants.append((name, checked))
    seeds = study["seeds"] or [1]
    if len(set(seeds)) != len(seeds):
        raise UsageError("--seeds repeats a seed")
    return dict(study, fixed=fixed, grid=grid, variants=variants or [(None, {})], seeds=seeds)


# ---------------------------------------------------------------------------------------------
# Runs


def expand_runs(study, data_identity):
    """Every run of the study, in order: variants x grid x seeds."""
    keys = list(study["grid"])
    runs = []
    for variant, variant_flags in study["variants"]:
        for point in itertools.product(*(study["grid"][k] for k in keys)):
            grid = dict(zip(keys, point))
            for seed in study["seeds"]:
                fixed = study["fixed"]
                if {**fixed, **variant_flags, **grid}.get("algo") == "slide":
                    fixed = {k: v for k, v in fixed.items() if k not in ONE_DEVICE_DROPS}
                flags = {**fixed, **variant_flags, **grid, "seed": str(seed)}
                runs.append({"id": run_id(data_identity, flags), "variant": variant, "grid": grid,
                             "flags": flags, "label": run_label(variant, grid, seed)})
    ids = [r["id"] for r in runs]
    if len(set(ids)) != len(ids):
        raise UsageError("two runs of the study have the same flags (a variant repeats another?)")
    return runs


def run_id(data_identity, flags):
    text = json.dumps({"data": data_identity, "flags": flags}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_label(variant, grid, seed):
    parts = [variant] if variant else []
    parts += [str(v) if k == "algo" else f"{k}={v}" for k, v in grid.items()]
    return " ".join(parts + [f"seed={seed}"])


def train_command(xmltrain, threads, data, flags, metrics_path):
    command = [xmltrain]
    if threads is not None:
        command += ["--threads", str(threads)]
    command.append("train")
    for key, path in data.items():
        command += [f"--{key}", str(path)]
    for flag, value in flags.items():
        if value is True:
            command.append(f"--{flag}")
        elif value is not False:
            command += [f"--{flag}", value]
    return command + ["--metrics", str(metrics_path)]


def read_jsonl(path):
    records = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                records.append(json.loads(line))
    return records


def read_summary_line(log_path):
    """The final JSON summary that xmltrain train prints on stdout, or {}."""
    summary = {}
    with open(log_path, errors="replace") as f:
        for line in f:
            if line.startswith("{") and '"summary"' in line:
                try:
                    summary = json.loads(line)
                except json.JSONDecodeError:
                    pass
    return summary


def summarize(records, summary, target):
    """The index's summary numbers from a run's metrics records and its stdout summary."""
    evaluated = [r for r in records if "p1" in r]
    last = evaluated[-1] if evaluated else (records[-1] if records else {})
    # The best among the evaluations on as many test rows as the last, as the summary's best_p1:
    # an --eval-rows sample's P@1 is not comparable with the whole test set's.
    comparable = [r for r in evaluated if r.get("test_rows") == last.get("test_rows")]
    best = max(comparable, key=lambda r: r["p1"]) if comparable else {}
    result = {
        "best_p1": summary.get("best_p1", best.get("p1")),
        "best_megabatch": best.get("megabatch"),
        "p1": last.get("p1"), "p3": last.get("p3"), "p5": last.get("p5"),
        "train_time_s": summary.get("train_time_s", last.get("train_time_s")),
        "megabatches": records[-1].get("megabatch") if records else None,
        "evaluations": len(evaluated),
        "perturbations": sum(1 for r in records if r.get("perturbed")),
    }
    if target is not None:
        reached = next((r for r in evaluated if r["p1"] >= target), None)
        result.update(target=target, time_to_target_s=reached["train_time_s"] if reached else None,
                      megabatches_to_target=reached["megabatch"] if reached else None)
    return result


def error_tail(log_path):
    try:
        with open(log_path, errors="replace") as f:
            lines = [line.rstrip() for line in f if line.strip()]
    except OSError:
        return ""
    return "\n".join(lines[-ERROR_TAIL_LINES:])


class Runner:
    """Runs xmltrain processes, tracking them so that an interrupt can stop them all."""

    def __init__(self, xmltrain, threads, data, runs_dir, timeout):
        self.xmltrain, self.threads, self.data = xmltrain, threads, data
        self.runs_dir, self.timeout = runs_dir, timeout
        self.processes, self.lock, self.stopping = set(), threading.Lock(), False

    def run(self, run, target):
        metrics = self.runs_dir / f"{run['id']}.jsonl"
        log = self.runs_dir / f"{run['id']}.log"
        for stale in (metrics, Path(f"{metrics}.partial")):
            stale.unlink(missing_ok=True)
        command = train_command(self.xmltrain, self.threads, self.data, run["flags"], metrics)
        started = time.monotonic()
        with open(log, "w") as log_file:
            log_file.write("$ " + " ".join(command) + "\n")
            log_file.flush()
            code = self.execute(command, log_file)
        record = {"id": run["id"], "variant": run["variant"], "grid": run["grid"], "flags": run["flags"],
                  "threads": self.threads, "wall_s": round(time.monotonic() - started, 3)}
        if code == 0 and metrics.exists():
            record["status"] = "ok"
            record.update(summarize(read_jsonl(metrics), read_summary_line(log), target))
        else:
            record.update(status="failed", exit_code=code, error=error_tail(log) or "no metrics file written")
        return record

    def execute(self, command, log_file):
        with self.lock:
            if self.stopping:
                return -signal.SIGTERM
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
            self.processes.add(process)
        try:
            return process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            log_file.write(f"\nsweep: killed after the --timeout of {self.timeout} s\n")
            return 124
        finally:
            with self.lock:
                self.processes.discard(process)

    def stop_all(self):
        with self.lock:
            self.stopping = True
            for process in self.processes:
                process.terminate()


def reuse_runs(pending, reuse_dirs, runs_dir, target):
    """Index records for the pending runs that another sweep (reuse_dirs) finished with the same id,
    their metrics and log copied into runs_dir; returns {id: record}."""
    reused = {}
    for folder in reuse_dirs:
        others = read_index(Path(folder) / "index.jsonl")
        for run in pending:
            other = others.get(run["id"])
            source = Path(folder) / "runs"
            if run["id"] in reused or not other or other.get("status") != "ok":
                continue
            metrics, log = source / f"{run['id']}.jsonl", source / f"{run['id']}.log"
            if not (metrics.exists() and log.exists()) or metrics.resolve() == (runs_dir / metrics.name).resolve():
                continue
            shutil.copyfile(metrics, runs_dir / metrics.name)
            shutil.copyfile(log, runs_dir / log.name)
            record = dict(other, variant=run["variant"], grid=run["grid"], flags=run["flags"])
            record.update(summarize(read_jsonl(metrics), read_summary_line(log), target))
            if target is None:
                for key in ("target", "time_to_target_s", "megabatches_to_target"):
                    record.pop(key, None)
            reused[run["id"]] = record
    return reused


# ---------------------------------------------------------------------------------------------
# The index


def read_index(path):
    """{id: record}, the last line of each id winning."""
    records = {}
    if path.exists():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    record = json.loads(line)
                    records[record["id"]] = record
                except (json.JSONDecodeError, KeyError):
                    print(f"sweep: {path}:{number}: ignoring a malformed line", file=sys.stderr)
    return records


def in_study_order(records, runs):
    """The records of the study's runs in the study's order (variants, grid, seeds), then any others."""
    ordered = {r["id"]: records[r["id"]] for r in runs if r["id"] in records}
    ordered.update((i, record) for i, record in records.items() if i not in ordered)
    return ordered


def write_index(path, records):
    temporary = path.with_suffix(".jsonl.tmp")
    with open(temporary, "w") as f:
        for record in records.values():
            f.write(json.dumps(record, sort_keys=True) + "\n")
    os.replace(temporary, path)


def refresh_targets(records, runs_dir, target):
    """Recomputes time to target of indexed ok runs when --target changed since they ran."""
    for record in records.values():
        if record.get("status") == "ok" and target is not None and record.get("target") != target:
            metrics = runs_dir / f"{record['id']}.jsonl"
            if metrics.exists():
                record.update(summarize(read_jsonl(metrics), read_summary_line(runs_dir / f"{record['id']}.log"),
                                        target))


def write_study(out, study, data, command_line):
    """OUT/study.json: what was asked, for the report."""
    description = {"name": study["name"] or out.resolve().name, "dataset": study["dataset"],
                   "data": {k: str(v) for k, v in data.items()}, "fixed": study["fixed"],
                   "grid": study["grid"], "variants": [{"name": n, "flags": f} for n, f in study["variants"] if n],
                   "seeds": study["seeds"], "target": study["target"], "command": command_line}
    (out / "study.json").write_text(json.dumps(description, indent=2) + "\n")


def progress_text(record, label):
    if record["status"] == "ok":
        best = record.get("best_p1")
        text = f"done {label}: best P@1 {best:.4f}" if best is not None else f"done {label}"
        if record.get("time_to_target_s") is not None:
            text += f", target at {record['time_to_target_s']:.3g} s"
        return text
    last = record["error"].splitlines()[-1] if record["error"] else ""
    return f"FAILED (exit {record['exit_code']}) {label}: {last}"


def run_all(pending, runner, index_path, records, jobs, target):
    """Runs the pending runs on a pool of jobs, appending each result to the index; returns failures."""
    failures = []
    with open(index_path, "a") as index, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(runner.run, run, target): run for run in pending}
        try:
            for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                run = futures[future]
                record = future.result()
                records[record["id"]] = record
                index.write(json.dumps(record, sort_keys=True) + "\n")
                index.flush()
                if record["status"] != "ok":
                    failures.append(record)
                print(f"[{done}/{len(pending)}] {progress_text(record, run['label'])}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            runner.stop_all()
            for future in futures:
                future.cancel()
            raise
    return failures


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
    runs_dir = args.out / "runs"
    index_path = args.out / "index.jsonl"
    records = read_index(index_path)
    if not args.dry_run:
        runs_dir.mkdir(parents=True, exist_ok=True)
        refresh_targets(records, runs_dir, study["target"])
        write_index(index_path, in_study_order(records, runs))
    pending = [r for r in runs if records.get(r["id"], {}).get("status") != "ok"]
    reused = {} if args.dry_run else reuse_runs(pending, args.reuse, runs_dir, study["target"])
    if reused:
        records.update(reused)
        write_index(index_path, in_study_order(records, runs))
        pending = [r for r in pending if r["id"] not in reused]
    threads = args.threads if args.threads is not None else max(1, (os.cpu_count() or 1) // args.jobs)
    skipped = len(runs) - len(pending)
    print(f"sweep: {len(runs)} runs, {skipped} already done" + (f" ({len(reused)} from --reuse)" if reused else "")
          + f", {len(pending)} to run"
          + (f", {args.jobs} at a time" if pending else ""), file=sys.stderr)
    if args.dry_run:
        for run in pending:
            print(shlex.join(train_command(xmltrain, threads, data, run["flags"], runs_dir / f"{run['id']}.jsonl")))
        return 0
    write_study(args.out, study, data, sys.argv)
    runner = Runner(xmltrain, threads, data, runs_dir, args.timeout)
    try:
        failures = run_all(pending, runner, index_path, records, args.jobs, study["target"])
    except KeyboardInterrupt:
        print("sweep: interrupted; finished runs are in the index", file=sys.stderr)
        return 130
    write_index(index_path, in_study_order(records, runs))
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
