"""Fixtures of the xmltrain package's tests: small synthetic data made here (as matrices, and
written as the text the command line reads), the command line itself, and the shared datasets.

XMLTRAIN_CLI names the `xmltrain` program of the same build (the ctest run sets it); the tests
that compare the package with it are skipped without it."""

import os
import pathlib
import subprocess

import numpy as np
import pytest
import scipy.sparse

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
SHARED_DATA = pathlib.Path(os.environ.get("XMLT_SHARED_DATA_DIR", REPOSITORY.parent / "shared" / "data"))


def synthetic(rows, features=200, labels=16, seed=0, nnz=10):
    """Rows whose labels their features tell: each label owns a few features, a row carries one
    to three labels and mostly their features. Values have three decimals, float32 exactly as the
    text says them."""
    rng = np.random.default_rng(seed)
    owned = [rng.choice(features, size=8, replace=False) for _ in range(labels)]
    x_rows, x_cols, x_vals, y_rows, y_cols = [], [], [], [], []
    for r in range(rows):
        row_labels = rng.choice(labels, size=int(rng.integers(1, 4)), replace=False)
        cols = set()
        for label in row_labels:
            cols.update(rng.choice(owned[label], size=4, replace=False).tolist())
        cols.update(rng.choice(features, size=nnz // 3, replace=False).tolist())
        for c in sorted(cols):
            x_rows.append(r)
            x_cols.append(c)
            x_vals.append(round(float(rng.uniform(0.1, 2.0)), 3))
        for label in sorted(row_labels.tolist()):
            y_rows.append(r)
            y_cols.append(label)
    X = scipy.sparse.csr_matrix((np.array(x_vals, dtype=np.float32), (x_rows, x_cols)), shape=(rows, features))
    Y = scipy.sparse.csr_matrix((np.ones(len(y_rows), dtype=np.float32), (y_rows, y_cols)), shape=(rows, labels))
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, Y


def write_text(path, X, Y):
    """The rows in the XML repository's text format ("N D L" header), values as float32 reads back."""
    X, Y = X.tocsr(), Y.tocsr()
    lines = [f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}"]
    for r in range(X.shape[0]):
        labels = ",".join(str(c) for c in Y.indices[Y.indptr[r]:Y.indptr[r + 1]])
        feats = " ".join(f"{c}:{float(v)!r}" for c, v in
                         zip(X.indices[X.indptr[r]:X.indptr[r + 1]], X.data[X.indptr[r]:X.indptr[r + 1]]))
        lines.append(f"{labels} {feats}")
    pathlib.Path(path).write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="session")
def data():
    """(X, Y, X_test, Y_test): 600 training and 200 test rows of synthetic().
    Same labels per feature in both (one draw, split)."""
    X, Y = synthetic(800)
    return X[:600], Y[:600], X[600:], Y[600:]


@pytest.fixture(scope="session")
def text_data(data, tmp_path_factory):
    """data() written as text: (train path, test path)."""
    folder = tmp_path_factory.mktemp("text")
    X, Y, Xt, Yt = data
    return write_text(folder / "train.txt", X, Y), write_text(folder / "test.txt", Xt, Yt)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("XMLTRAIN_CLI")
    if not path:
        pytest.skip("XMLTRAIN_CLI is not set: no xmltrain program to compare with")
    assert os.access(path, os.X_OK), f"XMLTRAIN_CLI={path} is not an executable"
    return path


def run_cli(cli, *args, check=True):
    result = subprocess.run([cli, *args], capture_output=True, text=True)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="session")
def bibtex():
    folder = SHARED_DATA / "bibtex"
    if not (folder / "train.txt").exists():
        pytest.skip(f"no shared Bibtex data in {folder}")
    return str(folder / "train.txt"), str(folder / "test.txt")
