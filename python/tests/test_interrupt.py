"""SIGINT (Ctrl-C) during train stops the run at its next safe point, checkpoints when
checkpoint_dir is given, and raises KeyboardInterrupt; the interpreter goes on, and the run can
be resumed."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import xmltrain

LONG = dict(hidden=32, epochs=40, batch=32, eval_every=1, mega_batch=2, seed=2)


def test_sigint_stops_at_a_safe_point_with_a_checkpoint(data, tmp_path):
    X, Y, Xt, Yt = data
    seen = []

    def interrupt_once(record):
        seen.append(record)
        if len(seen) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C sends it, to the whole process

    folder = tmp_path / "ckpt"
    with pytest.raises(KeyboardInterrupt, match="stopped by signal 2 at a safe point"):
        xmltrain.train(X, Y, Xt, Yt, callback=interrupt_once, checkpoint_dir=str(folder), progress=False, **LONG)
    assert 1 <= len(seen) < 10  # stopped long before the 40 epochs
    assert any(folder.iterdir()), "no checkpoint written"
    # Python's own handler is back: the next Ctrl-C is a KeyboardInterrupt here.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)  # interrupted at once
    # The run goes on from its checkpoint to the end.
    done = xmltrain.train(X, Y, Xt, Yt, resume=str(folder), progress=False, **LONG)
    assert done.summary["epochs"] == pytest.approx(40)


def test_sigint_without_a_checkpoint_folder(data):
    X, Y, _, _ = data

    def interrupt(record):
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt, match="progress is lost"):
        xmltrain.train(X, Y, callback=interrupt, progress=False, **LONG)


def test_an_exception_in_the_callback_stops_the_run_and_is_raised(data):
    X, Y, _, _ = data
    calls = []

    def fail(record):
        calls.append(record)
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        xmltrain.train(X, Y, callback=fail, progress=False, **LONG)
    assert len(calls) == 1


def test_a_signal_from_another_process(data, tmp_path):
    """Ctrl-C from outside: a child process trains, the test sends it SIGINT after its first
    evaluation; it ends with KeyboardInterrupt raised in Python, and a checkpoint."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = {sys.path!r}
        import xmltrain
        from conftest import synthetic
        X, Y = synthetic(600)
        def report(record):
            print("eval", flush=True)
        try:
            xmltrain.train(X, Y, callback=report, checkpoint_dir={str(tmp_path / 'ckpt')!r}, progress=False,
                           **{LONG!r})
        except KeyboardInterrupt as e:
            print("interrupted:", e, flush=True)
            sys.exit(3)
        print("finished", flush=True)
    """))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(__file__))
    assert child.stdout.readline().strip() == "eval"
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 3, out
    assert "interrupted: training stopped by signal 2 at a safe point" in out
    assert any((tmp_path / "ckpt").iterdir())


def test_sigint_in_the_ranker_stage_keeps_the_mlp_and_a_resume_fits_the_ranker(data, tmp_path):
    """Issue 61, point 3: a Ctrl-C in the ranker stage, after training, said "the progress is
    lost" and gave nothing back. It raises KeyboardInterrupt with the trained MLP as its `model`,
    and resume=checkpoint_dir fits the ranker: the model of a run never stopped. The signal comes
    at the run's last (and only) evaluation, after training and before the stage."""
    X, Y, Xt, Yt = data
    quick = dict(hidden=16, epochs=1, batch=32, eval_every="end", ranker_blend=0.5, ranker_passes=2, progress=False)

    def interrupt(record):
        os.kill(os.getpid(), signal.SIGINT)

    folder = tmp_path / "ckpt"
    with pytest.raises(KeyboardInterrupt, match="in the ranker stage, after training") as stopped:
        xmltrain.train(X, Y, Xt, Yt, callback=interrupt, checkpoint_dir=str(folder), **quick)
    assert "resume=" in str(stopped.value)
    mlp = stopped.value.model
    assert isinstance(mlp, xmltrain.Model)
    assert mlp.ranker is None
    assert len(mlp.history) == 1  # the evaluation at the end of training
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    resumed = xmltrain.train(X, Y, Xt, Yt, resume=str(folder), **quick)
    whole = xmltrain.train(X, Y, Xt, Yt, **quick)
    assert resumed.ranker is not None
    resumed_labels, resumed_scores = resumed.predict(Xt, k=5)
    whole_labels, whole_scores = whole.predict(Xt, k=5)
    assert (resumed_labels == whole_labels).all() and (resumed_scores == whole_scores).all()
    # Without checkpoint_dir, the MLP still comes back, and the message says no resume can follow.
    with pytest.raises(KeyboardInterrupt, match="no resume can fit the ranker") as again:
        xmltrain.train(X, Y, Xt, Yt, callback=interrupt, **quick)
    assert again.value.model.ranker is None
