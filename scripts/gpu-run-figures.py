#!/usr/bin/env python3
"""Every figure of one scripts/gpu-check.sh run in one JSON document, for docs/gpu-runs/.

Reads the run's folder: run.log (its header: run, gpu, cuda, mpi; and each step's "NAME: exit RC
after S s"), the Google Benchmark JSON of each bench_cuda* binary, and the last line (a JSON
object) of each torch-PRESET.log. Writes the document to stdout.

Usage: gpu-run-figures.py RUN_FOLDER
"""
import json
import pathlib
import re
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = pathlib.Path(sys.argv[1])
    log = folder / "run.log"
    if not log.is_file():
        print(f"gpu-run-figures.py: {log}: not found (run scripts/gpu-check.sh first)", file=sys.stderr)
        return 1
    document = {"header": {}, "steps": {}, "benchmarks": {}, "torch": {}}
    step = re.compile(r"^([\w.-]+): exit (-?\d+) after (\d+) s$")
    for line in log.read_text(errors="replace").splitlines():
        match = step.match(line)
        if match:
            document["steps"][match.group(1)] = {"exit": int(match.group(2)), "seconds": int(match.group(3))}
        elif line.startswith("xmltrain GPU run "):
            document["header"]["run"] = line[len("xmltrain GPU run "):]
        else:
            for key in ("gpu", "cuda", "mpi"):
                if line.startswith(key + ": ") and key not in document["header"]:
                    document["header"][key] = line[len(key) + 2:]
    for path in sorted(folder.glob("bench_cuda*.json")):
        try:
            document["benchmarks"][path.stem] = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            print(f"gpu-run-figures.py: {path}: not JSON ({error})", file=sys.stderr)
            return 1
    for path in sorted(folder.glob("torch-*.log")):
        lines = path.read_text(errors="replace").strip().splitlines()
        name = path.stem[len("torch-"):]
        try:
            document["torch"][name] = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            document["torch"][name] = {"error": lines[-1]}
    json.dump(document, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
