"""xmltrain.read: every format train reads, as scipy CSR matrices."""

import gzip
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse

import xmltrain
from conftest import synthetic, write_text


def assert_same(a, b):
    assert a.shape == b.shape
    assert (a != b).nnz == 0


def test_reads_the_rows_written(tmp_path):
    X, Y = synthetic(50)
    X2, Y2 = xmltrain.read(write_text(tmp_path / "d.txt", X, Y))
    assert isinstance(X2, scipy.sparse.csr_matrix) and isinstance(Y2, scipy.sparse.csr_matrix)
    assert X2.dtype == np.float32 and Y2.dtype == np.float32
    assert X2.indices.dtype == np.int32
    assert_same(X2, X)
    assert_same(Y2, Y)
    assert set(np.unique(Y2.data)) == {1.0}


def test_reads_gzip_and_zstd(tmp_path):
    X, Y = synthetic(30, seed=3)
    text = write_text(tmp_path / "d.txt", X, Y)
    with open(text, "rb") as source, gzip.open(tmp_path / "d.txt.gz", "wb") as target:
        shutil.copyfileobj(source, target)
    X2, Y2 = xmltrain.read(tmp_path / "d.txt.gz")
    assert_same(X2, X)
    assert_same(Y2, Y)
    if shutil.which("zstd") is None:
        pytest.skip("no zstd program to compress with")
    subprocess.run(["zstd", "-q", text, "-o", str(tmp_path / "d.txt.zst")], check=True)
    X3, Y3 = xmltrain.read(tmp_path / "d.txt.zst")
    assert_same(X3, X)
    assert_same(Y3, Y)


def test_reads_libsvm_and_one_based(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1,3 1:0.5 4:2\n2 2:1\n")
    X, Y = xmltrain.read(path, format="libsvm", one_based=True)
    assert X.shape == (2, 4) and Y.shape == (2, 3)
    assert X.toarray().tolist() == [[0.5, 0, 0, 2.0], [0, 1.0, 0, 0]]
    assert Y.toarray().tolist() == [[1, 0, 1], [0, 1, 0]]


def test_reads_a_binary_cache(tmp_path, cli):
    X, Y = synthetic(40, seed=5)
    text = write_text(tmp_path / "d.txt", X, Y)
    subprocess.run([cli, "convert", text, "-o", str(tmp_path / "d.xmlb")], check=True, capture_output=True)
    X2, Y2 = xmltrain.read(tmp_path / "d.xmlb")
    assert_same(X2, X)
    assert_same(Y2, Y)


def test_refuses_a_missing_or_malformed_file(tmp_path):
    with pytest.raises(ValueError, match="nope.txt"):
        xmltrain.read(tmp_path / "nope.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3 2\n0 1:nan\n1 2:1\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: value in '1:nan' is NaN or infinite"):
        xmltrain.read(bad)
    with pytest.raises(ValueError, match="--format must be auto, xml or libsvm"):
        xmltrain.read(bad, format="csv")
