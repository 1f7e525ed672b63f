"""Matrices as the engine takes them: CSR with float32 values, uint32 column ids and uint64 row
offsets. A scipy CSR matrix with float32 data and int32 indices (scipy's usual index type) is
passed as it is; anything else is converted once, here. The engine copies what it is passed
before it reads it (python/src/csr_arguments.cc), so the caller's arrays may change meanwhile."""

import numpy as np
import scipy.sparse


def csr_parts(matrix, name):
    """(rows, cols, indptr, indices, data) of `matrix`, converted only where its dtypes need it."""
    if not scipy.sparse.issparse(matrix):
        if isinstance(matrix, np.ndarray) and matrix.ndim == 2:
            matrix = scipy.sparse.csr_matrix(matrix)  # a dense array: converted
        else:
            raise TypeError(f"{name} must be a scipy.sparse matrix (CSR), not {type(matrix).__name__}")
    if matrix.format != "csr":
        matrix = matrix.tocsr()  # CSC, COO, ...: converted
    rows, cols = matrix.shape
    indptr = matrix.indptr
    if indptr.size and indptr.min() < 0:
        raise ValueError(f"{name}: malformed CSR arrays: negative offsets in indptr")
    # int32 offsets (scipy's usual) are widened: rows + 1 numbers.
    indptr = np.ascontiguousarray(indptr, dtype=np.int64).view(np.uint64)
    indices = matrix.indices
    if indices.size and indices.min() < 0:
        raise ValueError(f"{name}: malformed CSR arrays: negative column ids")
    if indices.dtype == np.int32 or indices.dtype == np.uint32:
        indices = np.ascontiguousarray(indices).view(np.uint32)
    else:
        if indices.size and indices.max() >= 2**32:
            raise ValueError(f"{name}: column ids of 2^32 and above")
        indices = np.ascontiguousarray(indices, dtype=np.uint32)
    data = np.ascontiguousarray(matrix.data, dtype=np.float32)
    return (int(rows), int(cols), indptr, indices, data)


def to_csr(parts):
    """A scipy CSR matrix of arrays the engine made (read): int32 column ids where they fit."""
    rows, cols, indptr, indices, data = parts
    if data is None:  # labels: every stored entry is 1
        data = np.ones(indices.size, dtype=np.float32)
    indices = indices.view(np.int32) if cols <= 2**31 else indices.astype(np.int64)
    return scipy.sparse.csr_matrix((data, indices, indptr.view(np.int64)), shape=(rows, cols), copy=False)
