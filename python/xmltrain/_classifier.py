"""Classifier: train() and Model in scikit-learn's estimator style."""

from ._train import train


class Classifier:
    """Classifier(**options).fit(X, Y).predict(X, k): the options are train()'s keywords.
    get_params/set_params make it usable where scikit-learn clones estimators."""

    def __init__(self, **options):
        self._options = dict(options)

    def get_params(self, deep=True):
        return dict(self._options)

    def set_params(self, **options):
        self._options.update(options)
        return self

    def fit(self, X, Y, X_test=None, Y_test=None, callback=None):
        self.model_ = train(X, Y, X_test, Y_test, callback=callback, **self._options)
        return self

    def predict(self, X, k=5):
        """The k best labels of each row, best first: int32 [n, k]."""
        return self.model_.predict(X, k)[0]

    def predict_scores(self, X, k=5):
        """(labels, scores) as Model.predict."""
        return self.model_.predict(X, k)

    def score(self, X, Y):
        """P@1 on (X, Y): higher is better, as scikit-learn's score."""
        return self.model_.evaluate(X, Y, k=1)["p1"]
