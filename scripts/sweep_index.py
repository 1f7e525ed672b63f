"""A sweep's folder, as scripts/sweep.py writes it and plot.py and report.py read it.

  OUT/index.jsonl     one line per finished run (id, status, variant, grid, flags, summary); a later
                      line for an id replaces an earlier one
  OUT/runs/ID.jsonl   the run's metrics (xmltrain train --metrics), one line per evaluation
  OUT/runs/ID.log     the run's stdout and stderr
  OUT/study.json      what the sweep was asked (name, data, fixed flags, grid, variants, seeds, target)

Python 3.11 standard library only.
"""
import json
import os
import sys
from pathlib import Path

INDEX_NAME = "index.jsonl"
RUNS_FOLDER = "runs"
STUDY_NAME = "study.json"


def index_file(folder):
    return Path(folder) / INDEX_NAME


def runs_folder(folder):
    return Path(folder) / RUNS_FOLDER


def metrics_file(runs_dir, run_id):
    return Path(runs_dir) / f"{run_id}.jsonl"


def log_file(runs_dir, run_id):
    return Path(runs_dir) / f"{run_id}.log"


def index_path(study):
    """The index of a sweep folder, or the index file itself (the readers take either)."""
    path = Path(study)
    return index_file(path) if path.is_dir() else path


def read_jsonl(path):
    """The records of a JSON-lines file (an index or a run's metrics), blank lines skipped."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_index(path, skip_malformed_as=None):
    """{id: record}, the last line of each id winning. An interrupted sweep may leave a torn last
    line: with skip_malformed_as (the program's name, for the warning) such lines are skipped and a
    missing index reads as {} (the sweep's own reading); without it they raise."""
    if skip_malformed_as is None:
        return {record["id"]: record for record in read_jsonl(path)}
    records = {}
    if path.exists():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    record = json.loads(line)
                    records[record["id"]] = record
                except (json.JSONDecodeError, KeyError):
                    print(f"{skip_malformed_as}: {path}:{number}: ignoring a malformed line", file=sys.stderr)
    return records


def write_index(path, records):
    """The whole index at once (through a temporary file, so that a reader never sees half of it)."""
    temporary = path.with_suffix(".jsonl.tmp")
    with open(temporary, "w") as f:
        for record in records.values():
            f.write(json.dumps(record, sort_keys=True) + "\n")
    os.replace(temporary, path)


def append_record(index, record):
    """One finished run onto an open index, flushed so that an interrupt keeps it."""
    index.write(json.dumps(record, sort_keys=True) + "\n")
    index.flush()


def first_reaching(evaluated, target):
    """The first evaluation (a metrics record with p1) whose P@1 reaches target, or None."""
    return next((r for r in evaluated if r["p1"] >= target), None)


def write_study(folder, description):
    Path(folder, STUDY_NAME).write_text(json.dumps(description, indent=2) + "\n")


def read_study(folder):
    """What the sweep was asked, or {} for a folder without study.json (an older sweep's)."""
    path = Path(folder) / STUDY_NAME
    return json.loads(path.read_text()) if path.exists() else {}
