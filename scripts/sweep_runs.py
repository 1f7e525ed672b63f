"""Running the runs of scripts/sweep.py: the xmltrain command of a run, the processes (in parallel,
with a timeout, stopped together on an interrupt), each run's index record from its metrics and
log, and runs taken from another sweep (--reuse).

Python 3.11 standard library only.
"""
import concurrent.futures
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import sweep_index

ERROR_TAIL_LINES = 15


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
    # The best among the MLP's evaluations on as many test rows as the last, as the summary's
    # mlp_best_p1 (best_p1 in logs written before it was named so): an --eval-rows sample's P@1 is
    # not comparable with the whole test set's.
    comparable = [r for r in evaluated if r.get("test_rows") == last.get("test_rows")]
    best = max(comparable, key=lambda r: r["p1"]) if comparable else {}
    # final_p1..final_p5 are the final model's: the summary's (with the shortlist ranker, which no
    # evaluation during training saw), or the last evaluation's when the run printed no summary.
    # Indexes written before named them p1..p5.
    final = summary if "p1" in summary else last
    ranker = summary.get("ranker") or {}
    result = {
        "mlp_best_p1": summary.get("mlp_best_p1", summary.get("best_p1", best.get("p1"))),
        "mlp_best_megabatch": best.get("megabatch"),
        "mlp_last_p1": last.get("p1"),
        "final_model": "MLP + ranker" if ranker.get("used") else "MLP",
        "final_p1": final.get("p1"), "final_p3": final.get("p3"), "final_p5": final.get("p5"),
        "ranker_holdout_rows": ranker.get("holdout_rows", 0) if ranker.get("fitted") else 0,
        "train_time_s": summary.get("train_time_s", last.get("train_time_s")),
        "megabatches": records[-1].get("megabatch") if records else None,
        "evaluations": len(evaluated),
        "perturbations": sum(1 for r in records if r.get("perturbed")),
    }
    if target is not None:
        reached = sweep_index.first_reaching(evaluated, target)
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
        metrics = sweep_index.metrics_file(self.runs_dir, run["id"])
        log = sweep_index.log_file(self.runs_dir, run["id"])
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
            record.update(summarize(sweep_index.read_jsonl(metrics), read_summary_line(log), target))
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
        others = sweep_index.read_index(sweep_index.index_file(folder), skip_malformed_as="sweep")
        for run in pending:
            other = others.get(run["id"])
            source = sweep_index.runs_folder(folder)
            if run["id"] in reused or not other or other.get("status") != "ok":
                continue
            metrics, log = sweep_index.metrics_file(source, run["id"]), sweep_index.log_file(source, run["id"])
            if not (metrics.exists() and log.exists()) or metrics.resolve() == (runs_dir / metrics.name).resolve():
                continue
            shutil.copyfile(metrics, runs_dir / metrics.name)
            shutil.copyfile(log, runs_dir / log.name)
            record = dict(other, variant=run["variant"], grid=run["grid"], flags=run["flags"])
            record.update(summarize(sweep_index.read_jsonl(metrics), read_summary_line(log), target))
            if target is None:
                for key in ("target", "time_to_target_s", "megabatches_to_target"):
                    record.pop(key, None)
            reused[run["id"]] = record
    return reused


def refresh_targets(records, runs_dir, target):
    """Recomputes time to target of indexed ok runs when --target changed since they ran."""
    for record in records.values():
        if record.get("status") == "ok" and target is not None and record.get("target") != target:
            metrics = sweep_index.metrics_file(runs_dir, record["id"])
            if metrics.exists():
                record.update(summarize(sweep_index.read_jsonl(metrics),
                                        read_summary_line(sweep_index.log_file(runs_dir, record["id"])), target))


def clock_of(record):
    """The clock of a run's times (scripts/plot.py's run_clock, without reading its metrics)."""
    flags = record.get("flags", {})
    if flags.get("algo", "single") in ("single", "slide"):
        return "wall"
    return flags.get("clock", "virtual")


def progress_text(record, label):
    if record["status"] == "ok":
        best = record.get("mlp_best_p1", record.get("best_p1"))  # best_p1: an index written before
        final = record.get("final_p1", record.get("p1"))  # p1: an index written before
        text = f"done {label}"
        if best is not None:
            text += f": the MLP's best P@1 {best:.4f}"
            if final is not None:
                text += f", the final model's ({record.get('final_model', 'MLP + ranker')}) {final:.4f}"
        if record.get("time_to_target_s") is not None:
            text += f", the MLP reached the target at {record['time_to_target_s']:.3g} {clock_of(record)} s"
        return text
    last = record["error"].splitlines()[-1] if record["error"] else ""
    return f"FAILED (exit {record['exit_code']}) {label}: {last}"


def duration(seconds):
    """'0:07', '12:34' or '1:02:03' (as xmltrain's progress line)."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def timing_text(done, total, elapsed):
    """'0:42 elapsed, about 1:24 left': the time left is the mean time a run has taken so far,
    wall time over runs finished, times the runs to go."""
    left = f", about {duration(elapsed / done * (total - done))} left" if done < total else ""
    return f"{duration(elapsed)} elapsed{left}"


def run_all(pending, runner, index_path, records, jobs, target):
    """Runs the pending runs on a pool of jobs, appending each result to the index; returns failures."""
    failures = []
    started = time.monotonic()
    with open(index_path, "a") as index, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(runner.run, run, target): run for run in pending}
        try:
            for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
                run = futures[future]
                record = future.result()
                records[record["id"]] = record
                sweep_index.append_record(index, record)
                if record["status"] != "ok":
                    failures.append(record)
                print(f"[{done}/{len(pending)}] {progress_text(record, run['label'])} "
                      f"({timing_text(done, len(pending), time.monotonic() - started)})", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            runner.stop_all()
            for future in futures:
                future.cancel()
            raise
    return failures
