"""read(): a data file as scipy matrices."""

import warnings

from . import _xmltrain
from ._matrices import to_csr
from ._paths import checked_path


def read(path, labels_path=None, *, format="auto", one_based=False, no_cache=False):
    """Reads `path`, in any format `xmltrain train` reads, and returns (X, Y): the features and
    the labels as scipy.sparse.csr_matrix, float32 values (Y's are all 1) and int32 column ids.

    XML-repository text (a first line "N D L"), libSVM multi-label text, either compressed with
    gzip or zstd (.gz, .zst), a .xmlb binary cache, or, with `labels_path`, the X and Y files of
    a split pair. `format`, `one_based` and `no_cache` are the command line's --format,
    --one-based and --no-cache. The reader's warnings are Python warnings. The matrices are
    read-only views of the loaded arrays (`X.copy()` gives a writable one).
    """
    features, labels, found = _xmltrain.read(checked_path(path), "" if labels_path is None else checked_path(labels_path),
                                             format, bool(one_based), bool(no_cache))
    for warning in found:
        warnings.warn(warning, stacklevel=2)
    return to_csr(features), to_csr(labels)
