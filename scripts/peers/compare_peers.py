#!/usr/bin/env python3
"""xmltrain beside the XML libraries on one data set: each system trains in a process of its own
(wall time and peak memory from the kernel's accounting of that process), predicts its top 5 for
every test row, and is scored by xml_metrics.py; xmltrain's own `eval` must agree with that score.

  compare_peers.py SET TRAIN TEST XMLTRAIN OUTDIR [--systems a,b,...] [--threads 2]
                   [--train-rows N [--cut-seed S]]
Writes OUTDIR/SET.json (every figure, the machine, the commands) and rewrites OUTDIR/../peers.md
from every OUTDIR/*.json there. --train-rows cuts the training set to N rows drawn at random (seed
S, 1 by default), the same cut for every system, the test set whole: OUTDIR/SET-Nrows-seedS.json.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xml_data  # noqa: E402
import xml_metrics  # noqa: E402

PEERS = ["pecos", "omikuji", "bonsai", "napkinxc"]
MARKER = "<!-- The tables above are written by scripts/compare-peers.sh; the text below is kept. -->"
PEER_NAMES = {
    "pecos": "PECOS XR-Linear",
    "omikuji": "Omikuji Parabel",
    "bonsai": "Omikuji Bonsai",
    "napkinxc": "napkinXC PLT",
    "xmltrain": "xmltrain, defaults",
    "xmltrain-before": "xmltrain, the best flags before",
}
# The best flags found by hand before the first layer's Adagrad (heavy-ball SGD on every layer):
# what the defaults have to beat; the default row is what a user gets.
BEFORE_FLAGS = {
    "bibtex": "--hidden 1024 --dropout 0.5 --lr-schedule cosine --epochs 40 --weight-decay 1e-4",
    "delicious": "--hidden 512 --dropout 0.5 --lr-schedule cosine --epochs 40",
    "eurlex57k": "--hidden 1024 --lr 2 --lr-schedule cosine --epochs 30 --dropout 0.5",
}


def run_child(argv, log_path):
    """Runs argv and returns (wall s, its own peak RSS in MiB, stdout)."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        stdout = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        with open(log_path) as log:
            tail = log.read()[-3000:]
        raise SystemExit(f"compare_peers.py: {shlex.join(argv)} exited {code}:\n{tail}")
    return wall, usage.ru_maxrss / 1024, stdout


def run_peer(system, args, workdir):
    argv = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_peer.py"),
            system, args.train, args.test, workdir, str(args.threads)]
    wall, rss, stdout = run_child(argv, os.path.join(workdir, f"{system}.log"))
    timing = json.loads(stdout.strip().splitlines()[-1])
    top = np.load(os.path.join(workdir, f"{system}.top.npy"))
    return top, {"train_s": timing["train_s"], "predict_s": timing["predict_s"], "wall_s": wall,
                 "peak_rss_mib": rss, "command": f"run_peer.py {system} (threads {args.threads})"}


def run_xmltrain(system, flags, args, workdir, Y_test):
    model = os.path.join(workdir, f"{system}.xmlt")
    train_argv = [args.xmltrain, "train", "--train", args.train, "--test", args.test, "--model", model] + shlex.split(flags)
    wall, rss, stdout = run_child(train_argv, os.path.join(workdir, f"{system}.log"))
    summary = {}
    for line in stdout.splitlines():
        if line.startswith("{") and '"summary"' in line:
            summary = json.loads(line)
    predictions = os.path.join(workdir, f"{system}.predictions.txt")
    predict_wall, _, _ = run_child([args.xmltrain, "predict", "--model", model, "--input", args.test,
                                    "--output", predictions, "--top-k", "5"],
                                   os.path.join(workdir, f"{system}.predict.log"))
    top = xml_metrics.read_predictions(predictions, Y_test.shape[0])
    _, _, eval_out = run_child([args.xmltrain, "eval", "--model", model, "--test", args.test,
                                "--train", args.train], os.path.join(workdir, f"{system}.eval.log"))
    own = json.loads(eval_out.strip().splitlines()[-1])
    shown = " ".join(["xmltrain train --train TRAIN --test TEST"] + ([flags] if flags else []))
    return top, {"train_s": summary.get("wall_time_s"), "predict_s": predict_wall, "wall_s": wall,
                 "peak_rss_mib": rss, "command": shown, "xmltrain_eval": own}


def check_against_eval(name, figures, own):
    """The one scorer must give what `xmltrain eval` gives for the same model."""
    for key in ("p1", "p3", "p5", "psp1", "psp3", "psp5"):
        theirs = own.get(key)
        if theirs is None:
            for nested in own.values():
                if isinstance(nested, dict) and key in nested:
                    theirs = nested[key]
        if theirs is None:
            raise SystemExit(f"compare_peers.py: xmltrain eval printed no '{key}' for {name}")
        if abs(theirs - figures[key]) > 2e-6:
            raise SystemExit(f"compare_peers.py: {name}: {key} {figures[key]:.6f} here, {theirs:.6f} from xmltrain eval")


def machine():
    model = "unknown CPU"
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line
    except OSError:
        pass
    isa = "AVX-512" if " avx512f" in flags else ("AVX2" if " avx2" in flags else "no AVX2")
    return {"cpu": model, "isa": isa, "cores": os.cpu_count(), "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def write_markdown(outdir):
    results = []
    for name in sorted(os.listdir(outdir)):
        if name.endswith(".json"):
            with open(os.path.join(outdir, name)) as f:
                results.append(json.load(f))
    order = {"bibtex": 0, "delicious": 1, "eurlex57k": 2}
    results.sort(key=lambda r: (order.get(r["set"], 9), r.get("train_rows", 0) or float("inf"), r.get("cut_seed", 0)))
    lines = ["# xmltrain beside the XML libraries", "",
             "Made by `scripts/compare-peers.sh SET` (one run per set; every system in its own process on the",
             "same machine, with the same two threads, scored by one implementation of the metrics,",
             "`scripts/peers/xml_metrics.py`, which agrees with `xmltrain eval` on xmltrain's models). The",
             "peers run with their README defaults; xmltrain's first row is `xmltrain train --train F --test G`",
             "with no other flag, scored on its final model (never a best epoch). Times: training (the",
             "peers' fit; xmltrain's `train_time_s`), the whole process's wall time (load, train, evaluate),",
             "prediction of the test rows. Memory: the process's peak resident set. P@k and PSP@k in percent;",
             "PSP@k with the propensity model A = 0.55, B = 1.5. SE: one standard error of P@1 for the test",
             "rows' count, sqrt(p (1 - p) / n). A set \"cut to N training rows\" was run with",
             "`--train-rows N --cut-seed S`: every system on the same N rows drawn at random, tested on the",
             "whole test split.", ""]
    for r in results:
        m = r["machine"]
        cut = f", cut to {r['train_rows']} training rows (seed {r['cut_seed']})" if r.get("train_rows") else ""
        lines += [f"## {r['set']}{cut} ({r['test_rows']} test rows; {m['cpu']}, {m['isa']}, {m['cores']} cores; {m['date']})",
                  "",
                  "| system | P@1 | P@3 | P@5 | PSP@1 | PSP@3 | PSP@5 | train s | wall s | predict s | peak MiB |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in r["rows"]:
            f = row["figures"]
            train = "-" if row["train_s"] is None else f"{row['train_s']:.1f}"
            metrics = " | ".join(f"{100 * f[k]:.2f}" for k in ("p1", "p3", "p5", "psp1", "psp3", "psp5"))
            lines.append(f"| {PEER_NAMES.get(row['system'], row['system'])} | {metrics} | {train} | "
                         f"{row['wall_s']:.1f} | {row['predict_s']:.1f} | {row['peak_rss_mib']:.0f} |")
        p1 = max(row["figures"]["p1"] for row in r["rows"])
        se = math.sqrt(p1 * (1 - p1) / r["test_rows"])
        lines += ["", f"SE of P@1 near {100 * p1:.1f}: {100 * se:.2f} points. Commands:", ""]
        for row in r["rows"]:
            lines.append(f"- {PEER_NAMES.get(row['system'], row['system'])}: `{row['command']}`")
        lines.append("")
    # What follows the marker in an existing file is written by hand (the reading of the tables)
    # and kept.
    path = os.path.join(os.path.dirname(outdir.rstrip("/")), "peers.md")
    kept = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
        if MARKER in text:
            kept = text[text.index(MARKER):]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n" + (kept or MARKER + "\n"))


def cut_training_set(X, Y, args, workdir):
    """`args.train_rows` rows of X, Y drawn without replacement (seed args.cut_seed), in their file
    order, written for every system to read; the label and feature counts stay the whole set's."""
    if not 0 < args.train_rows < X.shape[0]:
        raise SystemExit(f"compare_peers.py: --train-rows must be between 1 and {X.shape[0] - 1} "
                         f"(the training set's rows less one), not {args.train_rows}")
    keep = np.sort(np.random.default_rng(args.cut_seed).choice(X.shape[0], args.train_rows, replace=False))
    path = os.path.join(workdir, f"train-{args.train_rows}rows-seed{args.cut_seed}.txt")
    xml_data.write(path, X[keep], Y[keep])
    return X[keep], Y[keep], path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("set")
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("xmltrain")
    parser.add_argument("outdir")
    parser.add_argument("--systems", default=",".join(PEERS + ["xmltrain", "xmltrain-before"]))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-rows", type=int, default=0,
                        help="cut the training set to this many rows, drawn at random")
    parser.add_argument("--cut-seed", type=int, default=1, help="the cut's random draw")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    X_train, Y_train, _, num_labels = xml_data.read(args.train)
    _, Y_test, _, _ = xml_data.read(args.test)
    rows = []
    with tempfile.TemporaryDirectory(prefix="compare-peers-") as workdir:
        if args.train_rows:
            X_train, Y_train, args.train = cut_training_set(X_train, Y_train, args, workdir)
        weights = xml_metrics.inverse_propensities(Y_train, num_labels)
        for system in args.systems.split(","):
            print(f"compare-peers: {args.set}: {system} ...", file=sys.stderr, flush=True)
            if system in PEERS:
                top, row = run_peer(system, args, workdir)
            elif system == "xmltrain":
                top, row = run_xmltrain(system, "", args, workdir, Y_test)
            elif system == "xmltrain-before":
                flags = BEFORE_FLAGS.get(args.set, "") + " --input-optimizer sgd"
                top, row = run_xmltrain(system, flags.strip(), args, workdir, Y_test)
            else:
                raise SystemExit(f"compare_peers.py: unknown system '{system}'")
            row["system"] = system
            row["figures"] = xml_metrics.score(top, Y_test, weights)
            if "xmltrain_eval" in row:
                check_against_eval(system, row["figures"], row.pop("xmltrain_eval"))
            print(f"compare-peers: {args.set}: {system}: " +
                  " ".join(f"{k} {v:.4f}" for k, v in row["figures"].items()) +
                  f", train {row['train_s'] or 0:.1f} s, wall {row['wall_s']:.1f} s, {row['peak_rss_mib']:.0f} MiB",
                  file=sys.stderr, flush=True)
            rows.append(row)
    result = {"set": args.set, "test_rows": int(Y_test.shape[0]), "machine": machine(), "rows": rows}
    name = args.set
    if args.train_rows:
        result.update(train_rows=int(X_train.shape[0]), cut_seed=args.cut_seed)
        name += f"-{args.train_rows}rows-seed{args.cut_seed}"
    with open(os.path.join(args.outdir, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    write_markdown(args.outdir)


if __name__ == "__main__":
    main()
