"""xmltrain: sparse deep models for extreme multi-label classification, from Python.

    X, Y = xmltrain.read("train.txt")                  # scipy CSR matrices
    model = xmltrain.train(X, Y, X_test, Y_test, algo="adaptive", devices="cpu:4")
    labels, scores = model.predict(X_test, k=5)
    model.evaluate(X_test, Y_test, Y_train=Y)          # xmltrain eval's figures

The same engine as the `xmltrain` command line: every `xmltrain train` flag is a keyword of
`train`, with the flag's name, checks and messages. docs/python.md describes it all.
"""

from ._classifier import Classifier
from ._model import Model
from ._read import read
from ._train import train

__all__ = ["Classifier", "Model", "read", "train"]
