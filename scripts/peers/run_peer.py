#!/usr/bin/env python3
"""Trains one XML library with its README's defaults, predicts the top 5 labels of each test row,
and saves them, so that every system is scored by the same code (xml_metrics.py).

  run_peer.py SYSTEM TRAIN TEST WORKDIR THREADS
  SYSTEM: pecos (XR-Linear: PIFA embedding, hierarchical k-means indexer, XLinearModel.train),
          omikuji (Parabel: the library's default hyper-parameters), bonsai (Omikuji with its
          README's Bonsai settings: unbalanced k-means, cluster.k 100, max_depth 3), napkinxc
          (napkinXC PLT, its defaults).
Writes WORKDIR/SYSTEM.top.npy (rows x 5 labels, -1 where fewer) and prints one JSON line with
train_s and predict_s (reading the files is timed apart, as load_s).
"""
import json
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xml_data  # noqa: E402

DEPTH = 5


def l2_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1
    out = sp.diags(1 / norms).dot(X).tocsr().astype(np.float32)
    out.sort_indices()
    return out


def run_pecos(X, Y, Xt, threads, workdir):
    from pecos.xmc import Indexer, LabelEmbeddingFactory
    from pecos.xmc.xlinear.model import XLinearModel
    start = time.perf_counter()
    # PECOS's linear models expect L2-normalized rows (its README's TF-IDF features are): on raw
    # Bibtex counts they score P@1 0.528 against 0.637 normalized. Normalizing is part of its time.
    X, Xt = l2_rows(X), l2_rows(Xt)
    label_feat = LabelEmbeddingFactory.create(Y, X, method="pifa")
    cluster_chain = Indexer.gen(label_feat, threads=threads)
    model = XLinearModel.train(X, Y, C=cluster_chain, threads=threads)
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    scores = model.predict(Xt, only_topk=DEPTH, threads=threads).tocsr()
    top = np.full((Xt.shape[0], DEPTH), -1, dtype=np.int64)
    for r in range(Xt.shape[0]):
        s, e = scores.indptr[r], scores.indptr[r + 1]
        order = np.argsort(-scores.data[s:e], kind="stable")[:DEPTH]
        top[r, :order.size] = scores.indices[s:e][order]
    return top, train_s, time.perf_counter() - start


def run_omikuji(X, Y, Xt, threads, workdir, bonsai):
    import omikuji
    # Omikuji trains from a file in the repository's text format only.
    path = os.path.join(workdir, "omikuji-train.txt")
    xml_data.write(path, X, Y)
    params = omikuji.Model.default_hyper_param()
    if bonsai:
        params.cluster_balanced = False
        params.cluster_k = 100
        params.max_depth = 3
    start = time.perf_counter()
    model = omikuji.Model.train_on_data(path, params, n_threads=threads)
    train_s = time.perf_counter() - start
    os.remove(path)
    start = time.perf_counter()
    model.init_prediction_thread_pool(threads)
    top = np.full((Xt.shape[0], DEPTH), -1, dtype=np.int64)
    for r in range(Xt.shape[0]):
        s, e = Xt.indptr[r], Xt.indptr[r + 1]
        pairs = list(zip(Xt.indices[s:e].tolist(), Xt.data[s:e].tolist()))
        labels = [label for label, _ in model.predict(pairs, top_k=DEPTH)]
        top[r, :len(labels)] = labels
    return top, train_s, time.perf_counter() - start


def run_napkinxc(X, Y, Xt, threads, workdir):
    from napkinxc.models import PLT
    model = PLT(os.path.join(workdir, "napkinxc-model"), threads=threads)
    labels = [Y.indices[Y.indptr[r]:Y.indptr[r + 1]].tolist() for r in range(Y.shape[0])]
    start = time.perf_counter()
    model.fit(X, labels)
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    predicted = model.predict(Xt, top_k=DEPTH)
    top = np.full((Xt.shape[0], DEPTH), -1, dtype=np.int64)
    for r, row in enumerate(predicted):
        top[r, :len(row)] = row[:DEPTH]
    return top, train_s, time.perf_counter() - start


def main():
    system, train_path, test_path, workdir, threads = sys.argv[1:6]
    threads = int(threads)
    start = time.perf_counter()
    X, Y, num_features, _ = xml_data.read(train_path)
    Xt, _, test_features, _ = xml_data.read(test_path)
    if test_features != num_features:
        raise SystemExit(f"{test_path}: {test_features} features, the training file has {num_features}")
    load_s = time.perf_counter() - start
    if system == "pecos":
        top, train_s, predict_s = run_pecos(X, Y, Xt, threads, workdir)
    elif system in ("omikuji", "bonsai"):
        top, train_s, predict_s = run_omikuji(X, Y, Xt, threads, workdir, bonsai=system == "bonsai")
    elif system == "napkinxc":
        top, train_s, predict_s = run_napkinxc(X, Y, Xt, threads, workdir)
    else:
        raise SystemExit(f"run_peer.py: unknown system '{system}'")
    np.save(os.path.join(workdir, f"{system}.top.npy"), top)
    print(json.dumps({"system": system, "load_s": load_s, "train_s": train_s, "predict_s": predict_s}))


if __name__ == "__main__":
    main()
