"""P@k and PSP@k (k = 1, 3, 5) of top-5 predictions: one implementation for every system the peer
comparison scores, with xmltrain eval's definitions (kernels/top_k_metrics.h, the extreme
classification repository's): P@k = hits in the top k / k, averaged over every test row (a row
without labels counts, as all misses); PSP@k = the weighted hits over the same sum for each row's
true labels ranked by weight, with the inverse propensities w_l = 1 + C (N_l + B)^-A,
C = (ln N - 1) (B + 1)^A of the training labels (Jain, Prabhu and Varma 2016).
"""
import math

import numpy as np


def inverse_propensities(Y_train, num_labels, a=0.55, b=1.5):
    counts = np.zeros(num_labels, dtype=np.float64)
    train_counts = np.bincount(Y_train.indices, minlength=Y_train.shape[1]).astype(np.float64)
    counts[:min(num_labels, train_counts.size)] = train_counts[:num_labels]
    c = (math.log(Y_train.shape[0]) - 1) * (b + 1) ** a
    return 1 + c * (counts + b) ** -a


def score(top, Y_test, weights):
    """top: int array rows x 5, best first, -1 where a system gave fewer labels."""
    rows = Y_test.shape[0]
    if top.shape[0] != rows:
        raise ValueError(f"{top.shape[0]} prediction rows for {rows} test rows")
    hit = np.zeros(top.shape, dtype=bool)
    gain = np.zeros(top.shape, dtype=np.float64)
    best = np.zeros(top.shape, dtype=np.float64)  # each row's largest true-label weights, sorted
    for r in range(rows):
        truth = Y_test.indices[Y_test.indptr[r]:Y_test.indptr[r + 1]]
        if truth.size == 0:
            continue
        row_top = top[r]
        hit[r] = np.isin(row_top, truth) & (row_top >= 0)
        gain[r, hit[r]] = weights[row_top[hit[r]]]
        w = np.sort(weights[truth])[::-1][:top.shape[1]]
        best[r, :w.size] = w
    out = {}
    for k in (1, 3, 5):
        out[f"p{k}"] = float(hit[:, :k].sum() / k / rows)
        denominator = best[:, :k].sum()
        out[f"psp{k}"] = float(gain[:, :k].sum() / denominator) if denominator > 0 else 0.0
    return out


def read_predictions(path, rows, depth=5):
    """`xmltrain predict` output: one line per row of 'label:score' pairs, best first."""
    top = np.full((rows, depth), -1, dtype=np.int64)
    with open(path) as f:
        count = 0
        for r, line in enumerate(f):
            if r >= rows:
                raise ValueError(f"{path}: more prediction lines than the {rows} test rows")
            labels = [int(pair.split(":")[0]) for pair in line.split()[:depth]]
            top[r, :len(labels)] = labels
            count += 1
    if count != rows:
        raise ValueError(f"{path}: {count} prediction lines for {rows} test rows")
    return top
