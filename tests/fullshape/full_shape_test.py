#!/usr/bin/env python3
"""The product at the paper's full Table 1 shapes, run as a user runs it.

Generated data with exactly Amazon-670K's 135,909 features x 670,091 labels or Delicious-200K's
782,585 x 205,443, and a few hundred rows, through the real binary: single-device training in fp32,
every --algo on cpu:2 with the default --math (adaptive alone under a sanitizer), eval and
predict of the saved model (which must reproduce the training run's final metrics), a checkpoint
and resume that must equal the uninterrupted run on cpu:2 and on one device with the defaults
(bf16 weights and state where the CPU has bf16 products; not under a sanitizer), and the memory
plan against the peak resident memory each run really used.

Usage: full_shape_test.py XMLTRAIN PRESET [WORK_DIR]
Every step prints what it checked; the first failure exits 1 with the command and its output.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SHAPES = {"amazon670k": (135909, 670091), "delicious200k": (782585, 205443)}
ALGOS = ["adaptive", "elastic", "adasum", "sync", "crossbow"]
TRAIN_ROWS, TEST_ROWS, BATCH = 160, 40, 32


def fail(message):
    print(f"full_shape_test: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(args, expect=0):
    """Runs the binary; returns (stdout, stderr, peak resident MiB of that process)."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, text=True)
        # wait4 gives this child's own resource usage (RUSAGE_CHILDREN would be the maximum over
        # every child so far).
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    seconds = time.monotonic() - start
    if proc.returncode != expect:
        fail(f"exit {proc.returncode} (expected {expect}): {' '.join(args)}\n"
             f"stdout:\n{stdout}\nstderr:\n{stderr}")
    print(f"  ok ({seconds:.1f} s): {' '.join(os.path.basename(a) for a in args[1:])}", flush=True)
    return stdout, stderr, usage.ru_maxrss / 1024


def summary(stdout):
    lines = [l for l in stdout.splitlines() if l.strip().startswith("{")]
    if not lines:
        fail(f"no JSON summary in:\n{stdout}")
    return json.loads(lines[-1])


def planned_mib(stderr):
    marker = "planned host memory "
    at = stderr.find(marker)
    if at < 0:
        fail(f"no '{marker}' line in:\n{stderr}")
    return int(stderr[at + len(marker):].split()[0])


def check_plan(name, stderr, peak_mib):
    """The plan must cover what the run used (allowing for the binary, its libraries and the
    data) and must not be wildly above it."""
    plan = planned_mib(stderr)
    sanitized = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
    if sanitized:
        print(f"  memory plan {plan} MiB ({name}; peak not comparable here)")
        return
    print(f"  memory plan {plan} MiB, peak resident {peak_mib:.0f} MiB ({name})")
    if peak_mib > plan * 1.10 + 300:
        fail(f"{name}: peak resident {peak_mib:.0f} MiB exceeds the plan of {plan} MiB")
    if plan > peak_mib * 2.5 + 300:
        fail(f"{name}: the plan of {plan} MiB is far above the {peak_mib:.0f} MiB used")


def same_metrics(a, b, keys=("p1", "p3", "p5", "ndcg3", "ndcg5")):
    return all(abs(a[k] - b[k]) < 1e-12 for k in keys)


def check_resume(xmltrain, train, test, work, devices, name):
    """Stopped after the first epoch and resumed to the second: equal to the run that never stopped.
    Returns the uninterrupted run's stderr and peak."""
    two = [xmltrain, "train", "--train", train, "--test", test, "--batch", str(BATCH),
           "--epochs", "2", "--mega-batch", str(TRAIN_ROWS // BATCH), "--eval-every", "1",
           "--eval-rows", "16"] + devices
    whole, err, peak = run(two + ["--metrics", os.path.join(work, f"{name}.whole.jsonl")])
    ckpt = os.path.join(work, f"{name}.ckpt")
    first = list(two)
    first[first.index("--epochs") + 1] = "1"
    run(first + ["--checkpoint-dir", ckpt, "--metrics", os.path.join(work, f"{name}.resumed.jsonl")])
    resumed, _, _ = run(two + ["--resume", ckpt, "--metrics", os.path.join(work, f"{name}.resumed.jsonl")])
    if not same_metrics(summary(whole), summary(resumed)):
        fail(f"{name}: resumed run differs:\n{summary(whole)}\n{summary(resumed)}")
    print(f"  checkpoint and resume equal the uninterrupted run ({name})")
    return err, peak


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in SHAPES:
        fail("usage: full_shape_test.py XMLTRAIN amazon670k|delicious200k [WORK_DIR]")
    xmltrain, preset = sys.argv[1], sys.argv[2]
    features, labels = SHAPES[preset]
    work = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix=f"xmlt-full-{preset}-")
    os.makedirs(work, exist_ok=True)
    try:
        data = os.path.join(work, "data")
        run([xmltrain, "gen", "--preset", preset, "--scale", "1", "--rows", str(TRAIN_ROWS),
             "--test-rows", str(TEST_ROWS), "--seed", "1", "--out", data])
        train, test = os.path.join(data, "train.txt"), os.path.join(data, "test.txt")
        info, _, _ = run([xmltrain, "info", train])
        if f"features (D)            {features}" not in info or f"labels (L)              {labels}" not in info:
            fail(f"generated data is not {features} x {labels}:\n{info}")
        base = [xmltrain, "train", "--train", train, "--test", test, "--batch", str(BATCH),
                "--epochs", "1", "--mega-batch", "2", "--eval-every", "1", "--eval-rows", "16"]
        shape = f"{features}-128-{labels}"

        # Under a sanitizer (minutes a run) the multi-device runs are adaptive's alone: the other
        # merges' code does not depend on the shape, and runs under the sanitizers in the merges'
        # property tests; all five run here at full size in the plain tier.
        sanitized = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
        for algo in ALGOS[:1] if sanitized else ALGOS:
            metrics = os.path.join(work, f"{algo}.jsonl")
            out, err, peak = run(base + ["--algo", algo, "--devices", "cpu:2", "--metrics", metrics])
            s = summary(out)
            if s["model_shape"] != shape or s["train_samples"] != TRAIN_ROWS:
                fail(f"{algo}: summary {s}")
            records = [json.loads(l) for l in open(metrics)]
            if len(records) < 2 or any(r["test_rows"] != 16 for r in records[:-1]) or records[-1]["test_rows"] != TEST_ROWS:
                fail(f"{algo}: evaluations {[(r['megabatch'], r['test_rows']) for r in records]}")
            if not all(abs(r["loss"]) < 1e3 for r in records):
                fail(f"{algo}: test loss not finite: {[r['loss'] for r in records]}")
            check_plan(f"{algo} on cpu:2", err, peak)

        # A checkpoint and resume. An epoch is exactly one mega-batch here (5 batches of 32 rows,
        # without the warm-up's shorter first ones), so the first run ends on a mega-batch boundary
        # and the cosine's factor, set at each mega-batch's start from the rows of the run's
        # --epochs, is 1 for the first epoch of both the one-epoch and the two-epoch run. Not under a sanitizer (three runs,
        # two minutes a shape): there the checkpoint's writer and reader run in the checkpoint,
        # signal and resume tests, at smaller sizes through the same code.
        # Then on one device with every step default: bf16 weights and state where this CPU has bf16
        # products (a replica with no fp32 copy, which the checkpoint streams widened).
        if not sanitized:
            check_resume(xmltrain, train, test, work,
                         ["--algo", "adaptive", "--devices", "cpu:2", "--clock", "virtual", "--row-cost", "1e-4",
                          "--merge-cost", "1e-9", "--mega-batch-warmup", "off"], "adaptive")
            err, peak = check_resume(xmltrain, train, test, work, [], "single")
            check_plan("single with the default step", err, peak)
            print("  the default step: " + next((l.strip() for l in err.splitlines() if "output products in" in l),
                                               "(no step line)"))

        # Single device, its model saved; eval and predict must see the same model. In fp32: the
        # runs above take --math auto's choice, bf16 on a CPU that has it.
        model = os.path.join(work, "model.xmlt")
        out, err, peak = run(base + ["--math", "fp32", "--model", model, "--metrics", os.path.join(work, "single.jsonl")])
        trained = summary(out)
        if trained["model_shape"] != shape:
            fail(f"single: summary {trained}")
        check_plan("single", err, peak)
        evaluated = json.loads(run([xmltrain, "eval", "--model", model, "--test", test])[0].strip().splitlines()[-1])
        if not same_metrics(trained, evaluated):
            fail(f"eval of the saved model differs from training's final metrics:\n{trained}\n{evaluated}")
        print("  eval of the saved model reproduces the final metrics")
        predictions = os.path.join(work, "predictions.txt")
        run([xmltrain, "predict", "--model", model, "--input", test, "--top-k", "5", "--output", predictions])
        rows = [l for l in open(predictions) if l.strip()]
        if len(rows) != TEST_ROWS:
            fail(f"predict wrote {len(rows)} rows, expected {TEST_ROWS}")
        for row in rows:
            ids = [int(pair.split(":")[0]) for pair in row.split()]
            if len(ids) != 5 or any(not 0 <= i < labels for i in ids):
                fail(f"bad prediction row: {row!r}")
        print(f"full_shape_test: {preset} passed")
    finally:
        if len(sys.argv) <= 3:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
