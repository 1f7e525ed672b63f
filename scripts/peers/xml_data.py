"""Reads XML-repository text ("N D L" header, rows "l1,l2 f:v f:v ...", zero-based ids; a row
without labels starts with a space), plain or gzip-compressed, into scipy CSR matrices.

N in the header is not trusted (sample files keep the full set's count); D and L are, and an id
beyond them is an error naming the file and line, as xmltrain's reader says it.
"""
import gzip

import numpy as np
import scipy.sparse as sp


class DataError(ValueError):
    pass


def _open_text(path):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="ascii")
    return open(path, "r", encoding="ascii")


def read(path):
    """Returns (X, Y, num_features, num_labels): X float32 CSR rows x D, Y float32 CSR rows x L
    (ones where a row carries a label)."""
    with _open_text(path) as f:
        header = f.readline().split()
        if len(header) != 3 or not all(h.isdigit() for h in header):
            raise DataError(f"{path}:1: expected a header 'rows features labels'")
        num_features, num_labels = int(header[1]), int(header[2])
        ids_parts, values_parts, row_nnz = [], [], []
        label_idx, label_ptr = [], [0]
        for line_no, line in enumerate(f, start=2):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            labels_field, _, features_field = line.partition(" ")
            if ":" in labels_field:  # no labels and no leading space
                labels_field, features_field = "", line
            try:
                labels = [int(y) for y in labels_field.split(",")] if labels_field else []
            except ValueError:
                raise DataError(f"{path}:{line_no}: invalid label list '{labels_field[:40]}'") from None
            if labels and (min(labels) < 0 or max(labels) >= num_labels):
                raise DataError(f"{path}:{line_no}: a label id is outside 0..{num_labels - 1}")
            label_idx.extend(labels)
            label_ptr.append(len(label_idx))
            # Parsed line by line into arrays: the whole file's tokens as Python strings would take
            # gigabytes, and the peers' peak memory is measured in the process that reads.
            try:
                pairs = np.array(features_field.replace(":", " ").split(), dtype=np.float64).reshape(-1, 2)
            except ValueError:
                raise DataError(f"{path}:{line_no}: a feature token is not 'id:value'") from None
            ids = pairs[:, 0]
            if ids.size and (ids.min() < 0 or ids.max() >= num_features or np.any(ids != np.floor(ids))):
                raise DataError(f"{path}:{line_no}: a feature id is outside 0..{num_features - 1}")
            ids_parts.append(ids.astype(np.int32))
            values_parts.append(pairs[:, 1].astype(np.float32))
            row_nnz.append(ids.size)
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype=np.int32)
    values = np.concatenate(values_parts) if values_parts else np.zeros(0, dtype=np.float32)
    rows = len(row_nnz)
    feat_ptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=feat_ptr[1:])
    X = sp.csr_matrix((values, ids, feat_ptr),
                      shape=(rows, num_features))
    X.sum_duplicates()
    X.sort_indices()
    Y = sp.csr_matrix((np.ones(len(label_idx), dtype=np.float32), np.array(label_idx, dtype=np.int32),
                       np.array(label_ptr, dtype=np.int64)), shape=(rows, num_labels))
    Y.sum_duplicates()
    Y.data[:] = 1.0
    Y.sort_indices()
    return X, Y, num_features, num_labels


def write(path, X, Y):
    """Writes X, Y as plain XML-repository text (for a peer that reads only files)."""
    with open(path, "w", encoding="ascii") as f:
        f.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for r in range(X.shape[0]):
            labels = ",".join(str(y) for y in Y.indices[Y.indptr[r]:Y.indptr[r + 1]])
            s, e = X.indptr[r], X.indptr[r + 1]
            features = " ".join(f"{i}:{v:.7g}" for i, v in zip(X.indices[s:e], X.data[s:e]))
            f.write(f"{labels} {features}\n")
