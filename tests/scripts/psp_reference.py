#!/usr/bin/env python3
"""An independent computation of P@k, PSP@k and PSnDCG@k from `xmltrain predict` output.

Usage: psp_reference.py TRAIN TEST PREDICTIONS A B
Prints the metrics as JSON. TRAIN and TEST are XML-repository text (zero-based ids); PREDICTIONS
has one line per test row of "label:score" pairs, best first (at least 5). The definitions are
those of the extreme classification repository's Python tools (pyxclib's compute_inv_propesity,
psprecision and psndcg), written here from their formulas in plain Python: inverse propensity
w_l = 1 + C (N_l + B)^-A with C = (ln N - 1) (B + 1)^A; PSP@k = the mean over rows of the
weighted hits in the top k over k, divided by the same for each row's true labels ranked by w;
PSnDCG@k likewise with gains 1/log2(rank + 1), each row's terms divided by its ideal DCG@k.
"""
import json
import math
import sys


def read_labels(path):
    rows = []
    with open(path) as f:
        header = f.readline().split()
        assert len(header) == 3, f"{path}: expected an 'N D L' header"
        for line in f:
            first = line.rstrip("\n").split(" ")[0] if not line.startswith(" ") else ""
            if ":" in first:
                first = ""
            rows.append(sorted({int(x) for x in first.split(",") if x}))
    return int(header[2]), rows


def main():
    train_path, test_path, predictions_path, a, b = sys.argv[1:6]
    a, b = float(a), float(b)
    train_labels, train_rows = read_labels(train_path)
    test_labels, test_rows = read_labels(test_path)
    with open(predictions_path) as f:
        predictions = [[int(pair.split(":")[0]) for pair in line.split()] for line in f]
    assert len(predictions) == len(test_rows), "one prediction line per test row"

    counts = [0] * max(train_labels, test_labels)
    for row in train_rows:
        for label in row:
            counts[label] += 1
    c = (math.log(len(train_rows)) - 1) * (b + 1) ** a
    weight = [1 + c * (n + b) ** -a for n in counts]

    def gain(i):
        return 1 / math.log2(i + 2)

    out = {}
    for k in (1, 3, 5):
        hits = psp_num = psp_den = 0.0
        for top, labels in zip(predictions, test_rows):
            truth = set(labels)
            hits += sum(1 for l in top[:k] if l in truth) / k
            psp_num += sum(weight[l] for l in top[:k] if l in truth) / k
            psp_den += sum(sorted((weight[l] for l in labels), reverse=True)[:k]) / k
        out[f"p{k}"] = hits / len(test_rows)
        out[f"psp{k}"] = psp_num / psp_den if psp_den > 0 else 0.0
    for k in (3, 5):
        num = den = 0.0
        for top, labels in zip(predictions, test_rows):
            if not labels:
                continue
            truth = set(labels)
            ideal = sum(gain(i) for i in range(min(k, len(labels))))
            num += sum(weight[l] * gain(i) for i, l in enumerate(top[:k]) if l in truth) / ideal
            best = sorted((weight[l] for l in labels), reverse=True)[:k]
            den += sum(w * gain(i) for i, w in enumerate(best)) / ideal
        out[f"psndcg{k}"] = num / den if den > 0 else 0.0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
