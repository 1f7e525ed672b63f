"""Outputs that cannot be written at the end of a run (a full disk, here /dev/full, a device
that refuses every write with ENOSPC) do not lose the trained model: train raises with it
attached as the exception's `model`."""

import os

import pytest

import xmltrain

QUICK = dict(hidden=16, epochs=2, batch=32, eval_every="epoch", seed=2, progress=False)
FULL = "/dev/full"
needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full on this system")


def check_attached(error, data):
    X, Y, Xt, Yt = data
    model = error.model
    assert isinstance(model, xmltrain.Model)
    assert model.summary["epochs"] == pytest.approx(QUICK["epochs"])
    assert len(model.history) == QUICK["epochs"]
    labels, _ = model.predict(Xt, k=3)
    assert labels.shape == (Xt.shape[0], 3)


# Issue 63, row 4: the model file's write failed after training, and the trained model was lost.
@needs_dev_full
def test_a_model_file_that_cannot_be_written_raises_with_the_model(data, tmp_path):
    X, Y, Xt, Yt = data
    with pytest.raises(RuntimeError, match="No space left on device") as raised:
        xmltrain.train(X, Y, Xt, Yt, model=FULL, **QUICK)
    check_attached(raised.value, data)
    raised.value.model.save(str(tmp_path / "kept.xmlt"))  # the model can still be kept
    assert xmltrain.Model.load(str(tmp_path / "kept.xmlt")).shape == raised.value.model.shape


# Issue 63, row 4: the metrics file's first failed write ended the run; it now trains on, and the
# failure is raised at the end, with the model.
@needs_dev_full
def test_a_metrics_file_that_cannot_be_written_raises_at_the_end_with_the_model(data, tmp_path):
    X, Y, Xt, Yt = data
    seen = []
    with pytest.raises(RuntimeError, match="No space left on device") as raised:
        xmltrain.train(X, Y, Xt, Yt, metrics=FULL, callback=seen.append, checkpoint_dir=str(tmp_path / "ck"),
                       **QUICK)
    assert len(seen) == QUICK["epochs"]  # trained on to the end
    check_attached(raised.value, data)
