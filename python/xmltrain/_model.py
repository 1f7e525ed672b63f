"""Model: a trained model, its run's records, and what it is used for."""

import json
import numbers
import warnings

from . import _xmltrain
from ._matrices import csr_parts
from ._paths import checked_path

_DEFAULT_PROPENSITY = (0.55, 1.5)
_MAX_K = 1000  # as --top-k


def _warn(found):
    for warning in found:
        warnings.warn(warning, stacklevel=3)


class Model:
    """A trained model. `history`: the run's evaluation records (dicts, as --metrics writes
    them); `summary`: the run's summary (the JSON line `xmltrain train` ends with). A model
    loaded from a file has neither (an empty list and None)."""

    def __init__(self, model, history=(), summary=None):
        self._model = model
        self.history = list(history)
        self.summary = summary

    @classmethod
    def load(cls, path):
        """A model file written by `xmltrain train --model` or Model.save."""
        return cls(_xmltrain._Model.load(checked_path(path)))

    def save(self, path):
        """Writes the model file `xmltrain predict` and `xmltrain eval` read (atomically: a file
        is replaced only once the new one is complete)."""
        self._model.save(checked_path(path))

    @property
    def shape(self):
        """"features-hidden...-labels", as the summary's model_shape."""
        return self._model.shape

    @property
    def num_features(self):
        return self._model.num_features

    @property
    def num_labels(self):
        return self._model.num_labels

    @property
    def ranker(self):
        """The linear ranker that re-scores the MLP's shortlist, as a dict (form, blend,
        shortlist), or None when the model is the MLP alone."""
        if not self._model.has_ranker:
            return None
        return {"form": self._model.ranker_form, "blend": self._model.ranker_blend,
                "shortlist": self._model.ranker_shortlist}

    def predict(self, X, k=5):
        """(labels, scores): the k best labels of each row of X, best first, as int32 [n, k], and
        their scores as float32 [n, k] (fewer columns when the model has fewer labels), as
        `xmltrain predict` gives them: the MLP's probabilities, or with a ranker the blend it ranks
        by. k is an integer from 1 to 1000, as --top-k. Feature ids beyond the model's inputs are
        ignored, with a Python warning."""
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= _MAX_K:
            raise ValueError(f"k must be an integer in 1..{_MAX_K}, as --top-k, not {k!r}")
        labels, scores, found = self._model.predict(csr_parts(X, "X"), int(k))
        _warn(found)
        return labels, scores

    def evaluate(self, X, Y, k=5, propensity=_DEFAULT_PROPENSITY, Y_train=None):
        """The figures `xmltrain eval` gives for these rows, as a dict: rows, P@1,3,5, nDCG@3,5,
        loss, and with Y_train (the labels the model was trained on, for the propensities A, B
        of `propensity`) PSP@1,3,5 and PSnDCG@3,5. k (1, 3 or 5) keeps the figures at k and
        below. Warnings (unlabelled rows, ids beyond the model's) are Python warnings."""
        if k not in (1, 3, 5):
            raise ValueError(f"k must be 1, 3 or 5 (the figures xmltrain eval computes), not {k!r}")
        if Y_train is None and tuple(propensity) != _DEFAULT_PROPENSITY:
            raise ValueError("propensity weighs the PSP@k that Y_train's label counts give; give Y_train")
        text = ",".join(repr(float(v)) for v in propensity)
        y_train = None if Y_train is None else csr_parts(Y_train, "Y_train")
        figures, found = self._model.evaluate(csr_parts(X, "X"), csr_parts(Y, "Y"), text, y_train)
        _warn(found)
        figures = json.loads(figures)
        return {key: value for key, value in figures.items() if not key[-1].isdigit() or int(key[-1]) <= k}

    def __repr__(self):
        return f"xmltrain.Model({self.shape})"
