"""The study of scripts/sweep.py: which flags xmltrain train takes, the study file and the command
line merged into fixed flags, grid, variants, seeds and data, and the runs they make (variants x
grid x seeds, each with an id from its data and flags). See sweep.py for the study file's format.

Python 3.11 standard library only.
"""
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Flags the sweep sets itself for every run.
RESERVED = {"train", "test", "train-labels", "test-labels", "seed", "metrics", "model", "help"}
DATA_KEYS = ("train", "test", "train-labels", "test-labels")
STUDY_KEYS = {"name", "dataset", "seeds", "target", "fixed", "grid", "variant"} | set(DATA_KEYS)
# The flags xmltrain refuses for --algo slide (one CPU device, apps/train_flag_checks.cc), left out of
# its runs when they come from the study's fixed flags.
ONE_DEVICE_DROPS = ("devices", "speed", "hetero", "clock", "row-cost", "merge-cost", "batch-min", "beta", "momentum",
                    "pert-thr", "pert-delta", "pert-weights", "schedule", "merge", "collective", "momentum-mode",
                    "elastic-alpha", "lr-scaling", "preset", "mega-batch-warmup")
# The dispatch and merge of each multi-device --algo (apps/train_algorithm.cc), and the flags that
# only one of them reads (apps/algorithm_flags.cc): xmltrain refuses them for the others, so a run
# leaves them out rather than train the same model under several values.
ALGORITHM_PARTS = {"adaptive": ("dynamic", "normalized"), "elastic": ("static", "average"),
                   "adasum": ("static", "adasum"), "sync": ("sync", "gradient"), "crossbow": ("sync", "crossbow")}
DYNAMIC_DISPATCH_FLAGS = ("batch-min", "beta")
NORMALIZED_MERGE_FLAGS = ("pert-thr", "pert-delta", "pert-weights")
ELASTIC_FORCE_FLAGS = ("elastic-alpha",)


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


def ignored_flags(flags):
    """The flags among `flags` that the run's --algo (with --schedule and --merge) never reads."""
    algo = flags.get("algo", "single")
    if algo in ("single", "slide"):
        parts = None
    elif algo in ALGORITHM_PARTS:
        parts = ALGORITHM_PARTS[algo]
    else:
        return set()  # xmltrain names the unknown --algo
    ignored = set()
    if parts is None or flags.get("schedule", parts[0]) != "dynamic":
        ignored.update(DYNAMIC_DISPATCH_FLAGS)
    if parts is None or flags.get("merge", parts[1]) != "normalized":
        ignored.update(NORMALIZED_MERGE_FLAGS)
    if parts is None or flags.get("merge", parts[1]) not in ("average", "crossbow"):
        ignored.update(ELASTIC_FORCE_FLAGS)
    return ignored & set(flags)


def algorithm_name(flags):
    """'elastic', or 'adaptive --merge average' when --schedule or --merge override the preset."""
    return " ".join([flags.get("algo", "single")] + [f"--{k} {flags[k]}" for k in ("schedule", "merge") if k in flags])


def expand_runs(study, data_identity):
    """Every run of the study, in order: variants x grid x seeds. A [fixed] or grid flag that a run's
    algorithm ignores is left out of it (xmltrain would refuse it), so grid points that differ only
    in such flags are one run, made once; each run lists them in `left_out`. A variant that gives
    one itself is a usage error."""
    keys = list(study["grid"])
    runs, seen = [], {}
    for variant, variant_flags in study["variants"]:
        for point in itertools.product(*(study["grid"][k] for k in keys)):
            grid = dict(zip(keys, point))
            for seed in study["seeds"]:
                fixed = study["fixed"]
                every = {**fixed, **variant_flags, **grid}
                if every.get("algo") == "slide":
                    fixed = {k: v for k, v in fixed.items() if k not in ONE_DEVICE_DROPS}
                    every = {**fixed, **variant_flags, **grid}
                ignored = ignored_flags(every)
                for flag in sorted(ignored & set(variant_flags)):
                    raise UsageError(f"variant {variant!r} gives --{flag}, which --algo {algorithm_name(every)} "
                                     "ignores (xmltrain refuses it): drop it from the variant")
                kept_grid = {k: v for k, v in grid.items() if k not in ignored}
                flags = {**{k: v for k, v in fixed.items() if k not in ignored}, **variant_flags, **kept_grid,
                         "seed": str(seed)}
                identity = run_id(data_identity, flags)
                if identity in seen and kept_grid != grid:
                    seen[identity]["also_stands_for"] += 1
                    continue  # the same run as an earlier grid point: they differ in ignored flags only
                run = {"id": identity, "variant": variant, "grid": kept_grid, "flags": flags,
                       "label": run_label(variant, kept_grid, seed),
                       "left_out": sorted(ignored & (set(fixed) | set(grid))), "algorithm": algorithm_name(every),
                       "also_stands_for": 0}
                seen.setdefault(identity, run)
                runs.append(run)
    ids = [r["id"] for r in runs]
    if len(set(ids)) != len(ids):
        raise UsageError("two runs of the study have the same flags (a variant repeats another?)")
    return runs


def left_out_notes(study, runs):
    """Lines saying which flags each algorithm's runs leave out, and how many runs that saves."""
    notes = {}
    for run in runs:
        if run["left_out"]:
            key = (run["variant"], run["algorithm"], tuple(run["left_out"]))
            notes[key] = notes.get(key, 0) + run["also_stands_for"]
    lines = []
    for (variant, algorithm, flags), saved in notes.items():
        line = (f"--algo {algorithm}{f' (variant {variant})' if variant else ''} ignores "
                + ", ".join("--" + f for f in flags) + ": left out of its runs")
        swept = [f"--{f}" for f in flags if f in study["grid"]]
        if swept:
            line += f"; its grid points that differ only in {', '.join(swept)} are run once ({saved} runs fewer)"
        lines.append(line)
    return lines


def run_id(data_identity, flags):
    text = json.dumps({"data": data_identity, "flags": flags}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def run_label(variant, grid, seed):
    parts = [variant] if variant else []
    parts += [str(v) if k == "algo" else f"{k}={v}" for k, v in grid.items()]
    return " ".join(parts + [f"seed={seed}"])
