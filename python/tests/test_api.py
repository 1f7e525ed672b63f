"""train, Model, predict, evaluate, save/load and Classifier on small synthetic data."""

import json
import subprocess
import threading
import time

import numpy as np
import pytest

import xmltrain
from conftest import run_cli, synthetic

FAST = dict(hidden=32, epochs=4, batch=32, seed=3)


@pytest.fixture(scope="module")
def trained(data):
    X, Y, Xt, Yt = data
    records = []
    model = xmltrain.train(X, Y, Xt, Yt, callback=records.append, progress=False, **FAST)
    return model, records


def test_history_summary_and_callback(trained):
    model, records = trained
    assert len(model.history) == 4  # eval_every="epoch"
    assert records == model.history
    assert [round(r["epoch"]) for r in model.history] == [1, 2, 3, 4]
    for key in ("p1", "p3", "p5", "ndcg3", "ndcg5", "psp1", "loss", "train_loss", "devices", "test_rows"):
        assert key in model.history[-1]
    assert model.summary["model_shape"] == "200-32-16" == model.shape
    # The MLP's last evaluation: the summary's own figures, or under "mlp" when the ranker
    # (chosen by folds on these few rows) re-scores the final model.
    mlp = model.summary.get("mlp", model.summary)
    assert mlp["p1"] == model.history[-1]["p1"]
    # The labels follow the features: a model that learned nothing has P@1 near 3/16.
    assert model.summary["p1"] > 0.6


def test_predict(trained, data):
    model, _ = trained
    Xt = data[2]
    labels, scores = model.predict(Xt, k=5)
    assert labels.dtype == np.int32 and scores.dtype == np.float32
    assert labels.shape == scores.shape == (Xt.shape[0], 5)
    assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    assert np.all((labels >= 0) & (labels < 16))
    assert np.all([len(set(row)) == 5 for row in labels])
    # k beyond the label count: every label once.
    labels, _ = model.predict(Xt[:3], k=40)
    assert labels.shape == (3, 16)


def test_predict_with_a_ranker_ranks_every_k_best_first():
    # 120 labels and the default shortlist of 50: k = 50, 51, 100 and the label count.
    X, Y = synthetic(400, features=300, labels=120, seed=4)
    model = xmltrain.train(X, Y, progress=False, hidden=16, epochs=1, batch=32, ranker_blend=0.5, ranker_passes=2)
    assert model.ranker["shortlist"] == 50
    whole_labels, whole_scores = model.predict(X[:40], k=120)
    for k in (50, 51, 100, 120):
        labels, scores = model.predict(X[:40], k=k)
        assert labels.shape == (40, k)
        assert np.all(np.diff(scores, axis=1) <= 0), k  # never rising, past the shortlist too
        assert np.array_equal(labels, whole_labels[:, :k]) and np.array_equal(scores, whole_scores[:, :k])


def test_evaluate_gives_xmltrain_evals_figures(trained, data, text_data, cli, tmp_path):
    model, _ = trained
    X, Y, Xt, Yt = data
    path = tmp_path / "m.xmlt"
    model.save(path)
    expected = json.loads(run_cli(cli, "eval", "--model", str(path), "--test", text_data[1], "--train",
                                  text_data[0], "--propensity", "0.6,2").stdout)
    figures = model.evaluate(Xt, Yt, propensity=(0.6, 2), Y_train=Y)
    assert figures == expected
    plain = json.loads(run_cli(cli, "eval", "--model", str(path), "--test", text_data[1]).stdout)
    assert model.evaluate(Xt, Yt) == plain
    assert set(model.evaluate(Xt, Yt, k=1)) == {"rows", "p1", "loss"}


def test_save_load_round_trip(trained, data, tmp_path, cli):
    model, _ = trained
    path = tmp_path / "m.xmlt"
    model.save(path)
    loaded = xmltrain.Model.load(path)
    assert loaded.shape == model.shape and loaded.history == [] and loaded.summary is None
    a, b = model.predict(data[2]), loaded.predict(data[2])
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    loaded.save(tmp_path / "again.xmlt")
    assert (tmp_path / "again.xmlt").read_bytes() == path.read_bytes()
    # The command line reads it: its predictions are the package's.
    out = run_cli(cli, "predict", "--model", str(path), "--input", str(write_rows(tmp_path, data[2][:4])),
                  "--top-k", "3").stdout.split("\n")
    for row, line in enumerate(out[:4]):
        assert [int(pair.split(":")[0]) for pair in line.split()] == a[0][row, :3].tolist()


def write_rows(tmp_path, X):
    from conftest import write_text
    import scipy.sparse
    return write_text(tmp_path / "rows.txt", X, scipy.sparse.csr_matrix((X.shape[0], 16), dtype=np.float32))


def test_other_dtypes_and_formats_are_converted(data):
    X, Y, Xt, Yt = data
    a = xmltrain.train(X, Y, **FAST, progress=False)
    b = xmltrain.train(X.astype(np.float64).tocsc(), Y.astype(np.int64).tocoo(), **FAST, progress=False)
    c = xmltrain.train(X.toarray(), Y.toarray(), **FAST, progress=False)
    pa, pb, pc = a.predict(Xt), b.predict(Xt), c.predict(Xt)
    assert np.array_equal(pa[1], pb[1]) and np.array_equal(pa[1], pc[1])


def test_unsorted_and_repeated_ids_are_read_as_the_text_reader_reads_them(data):
    X, Y, Xt, Yt = data
    a = xmltrain.train(X, Y, **FAST, progress=False)
    # Each row's entries reversed, the first split in two halves that sum to it.
    import scipy.sparse
    rows, cols, vals = [], [], []
    for r in range(X.shape[0]):
        begin, end = X.indptr[r], X.indptr[r + 1]
        for e in range(end - 1, begin - 1, -1):
            rows.append(r), cols.append(X.indices[e]), vals.append(X.data[e])
    shuffled = scipy.sparse.csr_matrix((np.array(vals, np.float32), np.array(cols, np.int32),
                                        X.indptr.copy()), shape=X.shape)
    assert not shuffled.has_sorted_indices
    b = xmltrain.train(shuffled, Y, **FAST, progress=False)
    assert np.array_equal(a.predict(Xt)[1], b.predict(Xt)[1])


def test_classifier(data):
    X, Y, Xt, Yt = data
    clf = xmltrain.Classifier(**FAST, progress=False)
    assert clf.get_params()["hidden"] == 32
    assert clf.fit(X, Y) is clf
    labels = clf.predict(Xt, k=3)
    assert labels.shape == (Xt.shape[0], 3) and labels.dtype == np.int32
    assert clf.score(Xt, Yt) == clf.model_.evaluate(Xt, Yt)["p1"] > 0.6
    assert clf.set_params(epochs=1) is clf and clf.get_params()["epochs"] == 1


def test_the_gil_is_released_while_training(data):
    X, Y, _, _ = data
    done = threading.Event()
    ticks = []

    def run():
        xmltrain.train(X, Y, hidden=64, epochs=400, batch=16, eval_every="end", progress=False)
        done.set()

    thread = threading.Thread(target=run)
    start = time.monotonic()
    thread.start()
    while not done.is_set():
        ticks.append(time.monotonic())
        time.sleep(0.005)
    thread.join()
    took = time.monotonic() - start
    assert took > 0.3, "training too short to tell"
    # This thread kept running all along: no gap near the training's length.
    assert max(np.diff([start] + ticks)) < took / 3
    assert len(ticks) > 20
