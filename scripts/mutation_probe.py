#!/usr/bin/env python3
"""Mutation probe: do the fast test tiers catch one-line faults in the core logic?

Usage: scripts/mutation_probe.py [--only REGEX] [--list] [--check] [--keep] [--mutants FILE]

Copies the checkout (tracked and untracked files, not ignored ones) to a temporary folder, builds
it once (Release, CUDA and benchmarks off), checks that every mutant's tests pass unmutated, then
for each mutant of scripts/mutants.json in turn: replaces its one line, rebuilds, runs its tests
(ctest arguments, e.g. "-L merge" or "-L scheduler -R LrSearch"), and restores the line. A mutant
is killed when a test fails (or the build fails, reported apart as a stillborn mutant). Prints a
line per mutant and the score; exits 1 when a mutant survives.

The checkout itself is never modified. A full probe takes about 30 to 40 minutes on two cores,
most of it the first build and the scheduler and apps labels. The score is kept in
docs/MUTATION.md; add mutants when you add logic.
"""
import argparse
import json
import re
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, cwd, log):
    """Runs cmd, appending its output to log; returns the exit code."""
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        return subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def share_data_dir():
    """The tests find real data sets beside the checkout (tests/test_support.h); the copy is not
    beside it, so a data set's tests would skip and their mutants survive: point them at it."""
    data = os.path.join(os.path.dirname(ROOT), "shared", "data")
    if "XMLT_DATA_DIR" not in os.environ and os.path.isdir(data):
        os.environ["XMLT_DATA_DIR"] = data


def copy_checkout(dest):
    files = subprocess.check_output(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT)
    for rel in files.decode().split("\0"):
        if not rel or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), target)


def apply(src, mutant):
    """Replaces the mutant's text in its file; returns the original content."""
    path = os.path.join(src, mutant["file"])
    with open(path) as f:
        original = f.read()
    count = original.count(mutant["from"])
    if count != 1:
        raise SystemExit(f"mutation_probe: '{mutant['name']}': its text occurs {count} times in "
                         f"{mutant['file']} (need exactly once); update scripts/mutants.json")
    with open(path, "w") as f:
        f.write(original.replace(mutant["from"], mutant["to"]))
    return original


def restore(src, mutant, original):
    with open(os.path.join(src, mutant["file"]), "w") as f:
        f.write(original)


def ctest(build, args, log):
    return run(["ctest", "--test-dir", build, "-j", str(os.cpu_count() or 2), "--timeout", "600"]
               + shlex.split(args), build, log)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run only the mutants whose name matches this regular expression")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--check", action="store_true",
                        help="only check that each mutant's text occurs exactly once in its file of the checkout "
                             "(a test runs it, so that moving code cannot leave a mutant behind)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy and its logs")
    parser.add_argument("--mutants", default=os.path.join(ROOT, "scripts", "mutants.json"))
    options = parser.parse_args()
    share_data_dir()
    with open(options.mutants) as f:
        mutants = [m for m in json.load(f) if re.search(options.only, m["name"])]
    if options.list:
        for m in mutants:
            print(f"{m['file']:40} {m['name']}  [{m['tests']}]")
        return 0
    if not mutants:
        raise SystemExit("mutation_probe: no mutant matches --only")
    if options.check:
        stale = []
        for m in mutants:
            path = os.path.join(ROOT, m["file"])
            count = open(path).read().count(m["from"]) if os.path.isfile(path) else -1
            if count != 1:
                where = "no such file" if count < 0 else f"its text occurs {count} times"
                stale.append(f"  '{m['name']}': {m['file']}: {where} (need exactly once)")
        if stale:
            print("mutation_probe: scripts/mutants.json no longer matches the source:\n" + "\n".join(stale))
            return 1
        print(f"mutation_probe: the text of each of the {len(mutants)} mutants occurs once in its file")
        return 0

    work = tempfile.mkdtemp(prefix="xmlt-mutation-")
    src, build, log = os.path.join(work, "src"), os.path.join(work, "build"), os.path.join(work, "log.txt")
    print(f"mutation probe: {len(mutants)} mutants; logs in {log}", flush=True)
    copy_checkout(src)
    for m in mutants:  # every mutant's text must be there before anything is built
        restore(src, m, apply(src, m))
    jobs = str(os.cpu_count() or 2)
    if run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DXMLT_CUDA=OFF",
            "-DXMLT_BUILD_BENCHMARKS=OFF"], src, log) != 0 or \
            run(["cmake", "--build", build, "-j", jobs], src, log) != 0:
        raise SystemExit(f"mutation_probe: the unmutated copy does not build; see {log}")
    baseline = sorted({m["tests"] for m in mutants})
    for args in baseline:
        if ctest(build, args, log) != 0:
            raise SystemExit(f"mutation_probe: tests '{args}' fail without any mutant; see {log}")

    killed = survived = stillborn = 0
    for m in mutants:
        start = time.time()
        original = apply(src, m)
        try:
            if run(["cmake", "--build", build, "-j", jobs], src, log) != 0:
                verdict = "stillborn (does not build)"
                stillborn += 1
            elif ctest(build, m["tests"], log) != 0:
                verdict = "killed"
                killed += 1
            else:
                verdict = "SURVIVED"
                survived += 1
        finally:
            restore(src, m, original)
        print(f"  {verdict:10} {m['name']}  [{m['file']}; {m['tests']}; {time.time() - start:.0f} s]", flush=True)
    counted = killed + survived
    print(f"score: {killed} of {counted} mutants killed" +
          (f" ({stillborn} stillborn, not counted)" if stillborn else ""))
    if options.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
