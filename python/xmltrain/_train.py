"""train(): `xmltrain train` on matrices in memory."""

import json

from . import _xmltrain
from ._matrices import csr_parts
from ._model import Model
from ._options import train_arguments
from ._progress import ProgressBar


def train(X, Y, X_test=None, Y_test=None, *, callback=None, progress=None, **options):
    """Trains a model on the rows of X (features) and Y (labels), evaluating on X_test and Y_test
    when given, and returns it as a Model with the run's `history` and `summary`.

    Every `xmltrain train` flag is a keyword, named as the flag with '_' for '-', with the same
    default and checks: algo="adaptive", devices="cpu:4", lr="auto", eval_every=2,
    hidden=(256, 128), propensity=(0.55, 1.5), checkpoint_dir="ckpt", metrics="run.jsonl",
    model="run.xmlt" (written as the command line writes it), threads=2, ... A keyword with the
    value None keeps the flag's default. An unknown keyword raises TypeError, a bad value
    ValueError, each with the command line's message.

    `callback(record)` is called with each evaluation's record (a dict, the line --metrics
    writes); an exception it raises stops the run at its next safe point and is raised. Progress
    is shown when the session is interactive (stderr a terminal, or a notebook): a tqdm bar when
    tqdm is installed, else a line with the time elapsed and left (progress=False: never; True:
    always).

    X, Y: scipy.sparse matrices with as many rows (other types and dtypes than CSR with float32
    data and int32 indices are converted once). Y's stored values must be 1. The engine trains on
    its own copy of them, taken when train is called: they may change meanwhile.

    When the model or metrics file cannot be written after training (a full disk), the error is
    raised with the trained Model as its `model` attribute.

    SIGINT (Ctrl-C) or SIGTERM stop the run at its next safe point, after a checkpoint when
    checkpoint_dir is given (resume=checkpoint_dir goes on from it), and raise KeyboardInterrupt.
    A stop in the ranker stage, after training, ends it within seconds; the KeyboardInterrupt then
    carries the trained MLP, without its ranker, as its `model` attribute, and resume=checkpoint_dir
    fits the ranker.
    """
    if (X_test is None) != (Y_test is None):
        raise TypeError("train() takes X_test and Y_test together (the test rows and their labels)")
    args = train_arguments(options, X_test is not None)
    x = csr_parts(X, "X")
    y = csr_parts(Y, "Y")
    x_test = None if X_test is None else csr_parts(X_test, "X_test")
    y_test = None if Y_test is None else csr_parts(Y_test, "Y_test")
    history = []

    def on_eval(line):
        record = json.loads(line)
        history.append(record)
        if callback is not None:
            callback(record)

    bar = ProgressBar.open(progress)
    try:
        model, summary = _xmltrain.train(args, x, y, x_test, y_test, on_eval, bar)
    except (Exception, KeyboardInterrupt) as error:
        # Trained, but the model or metrics file could not be written, or a stop came in the ranker
        # stage after training: the model (there, the MLP without its ranker) comes with the error.
        if isinstance(getattr(error, "model", None), _xmltrain._Model):
            error.model = Model(error.model, history=history, summary=json.loads(error.summary))
        raise
    finally:
        if bar is not None:
            bar.close()
    return Model(model, history=history, summary=json.loads(summary))
