"""train() with other Python threads about: the matrices changed while a run reads them, two
runs at once in one interpreter, and the signal handlers the runs share. Each ordering is made
with events, not with sleeps."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import xmltrain

QUICK = dict(hidden=16, epochs=3, batch=32, eval_every="epoch", seed=2, progress=False)


def run_child(tmp_path, body):
    """Runs `body` in a fresh interpreter (a crash must fail the test, not end the test run);
    returns (exit code, stdout and stderr)."""
    script = tmp_path / "child.py"
    script.write_text(f"import sys\nsys.path[:0] = {sys.path!r}\n" + textwrap.dedent(body))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            cwd=os.path.dirname(__file__))
    return result.returncode, result.stdout + result.stderr


# Issue 63, row 1: the engine read the caller's arrays while training with the GIL released, so a
# thread (or the callback) that rewrote them made it index memory with ids it had never checked.
def test_matrices_rewritten_while_training_change_nothing(tmp_path):
    code, out = run_child(tmp_path, f"""
        import threading
        import numpy as np
        import xmltrain
        from conftest import synthetic
        X, Y = synthetic(800)
        X, Y, Xt, Yt = X[:600].copy(), Y[:600].copy(), X[600:].copy(), Y[600:].copy()
        reference = xmltrain.train(X, Y, Xt, Yt, ranker="off", normalize="none", **{QUICK!r})
        far = 2**31 - 1

        # The callback rewrites every matrix after the first evaluation.
        def rewrite(record):
            if len(seen) == 0:
                for m in (X, Y, Xt, Yt):
                    m.indices[:] = far
                X.data[:] = np.nan
            seen.append(record)
        seen = []
        Xs, Ys, Xts, Yts = X.copy(), Y.copy(), Xt.copy(), Yt.copy()
        model = xmltrain.train(X, Y, Xt, Yt, callback=rewrite, ranker="off", normalize="none", **{QUICK!r})
        assert [r["p1"] for r in model.history] == [r["p1"] for r in reference.history], "another run"

        # A thread does the same while the run trains on (its first evaluation lets it go).
        X, Y, Xt, Yt = Xs, Ys, Xts, Yts
        first = threading.Event()
        done = threading.Event()
        def spoil():
            first.wait()
            for m in (X, Y, Xt, Yt):
                m.indices[:] = far
            done.set()
        def let_go(record):
            first.set()
            done.wait()
        thread = threading.Thread(target=spoil)
        thread.start()
        model = xmltrain.train(X, Y, Xt, Yt, callback=let_go, ranker="off", normalize="none", **{QUICK!r})
        thread.join()
        assert [r["p1"] for r in model.history] == [r["p1"] for r in reference.history], "another run"
        print("trained on its own copies")
    """)
    assert code == 0, out
    assert "trained on its own copies" in out


# Issue 63, row 2: the stop a run asks for was one flag for the whole process, so a callback that
# raised in one run stopped every other run with a KeyboardInterrupt.
def test_one_runs_stop_does_not_stop_another(data):
    X, Y, Xt, Yt = data
    raised = []

    def fail(record):
        raise ValueError("from run A's callback")

    def run_a():
        try:
            xmltrain.train(X, Y, callback=fail, **QUICK)
        except ValueError as e:
            raised.append(e)

    # Run A starts, fails and ends while run B waits in its first callback; B then goes on.
    def start_a_once(record):
        if not raised:
            thread = threading.Thread(target=run_a)
            thread.start()
            thread.join()

    try:
        model = xmltrain.train(X, Y, Xt, Yt, callback=start_a_once, **QUICK)
    except KeyboardInterrupt as e:  # not let through: pytest would end the whole session
        pytest.fail(f"run A's stop stopped run B: {e}")
    assert [str(e) for e in raised] == ["from run A's callback"]
    assert model.summary["epochs"] == pytest.approx(QUICK["epochs"])
    assert len(model.history) == QUICK["epochs"]


def ctrl_c_raises_keyboard_interrupt():
    """Whether SIGINT sent to this process now is Python's KeyboardInterrupt, as Ctrl-C would be."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)  # interrupted at once when Python's handler is in place
    except KeyboardInterrupt:
        return True
    return False


# Issue 63, row 3: each run saved the handlers it found and put them back when it ended, so when
# the first of two overlapping runs ended first, the second put xmltrain's handler back for good.
def test_ctrl_c_is_pythons_again_after_overlapping_runs(data):
    X, Y, _, _ = data
    b_waits, a_ended = threading.Event(), threading.Event()

    def wait_for_a(record):
        b_waits.set()
        a_ended.wait()

    thread_b = threading.Thread(target=lambda: xmltrain.train(X, Y, callback=wait_for_a, **QUICK))

    # A (here) starts B and ends while B is still running; B ends last.
    def start_b(record):
        if not thread_b.is_alive() and not b_waits.is_set():
            thread_b.start()
            b_waits.wait()

    xmltrain.train(X, Y, callback=start_b, **QUICK)
    a_ended.set()
    thread_b.join()
    assert ctrl_c_raises_keyboard_interrupt(), "SIGINT no longer raises KeyboardInterrupt"
