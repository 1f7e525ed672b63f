"""train()'s keywords as `xmltrain train`'s arguments: a keyword is its flag's name with '_' for
'-' (eval_every= is --eval-every), so the command line's parser reads, checks and refuses it as
it does the flag."""

import os

from ._paths import checked_path, refuse_null_byte

# Flags about files the data comes from: train() takes matrices instead.
_FILE_FLAGS = {"train", "train_labels", "test", "test_labels", "one_based", "no_cache", "format", "config"}
# Flags whose value may be given several times.
_REPEATED = {"inject_fault"}


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same number
    if isinstance(value, os.PathLike):
        return checked_path(value)
    return str(value)


def _check_keyword(key):
    """TypeError for a keyword that is no flag's: a name with '-' (CLI11 would read 'train-labels'
    as --train-labels, where train_labels is refused), and help, which prints and stops."""
    if "-" in key:
        raise TypeError(f"train() got the keyword '{key}': keywords are the flags' names with '_' for '-' "
                        f"({key.replace('-', '_')})")
    if key == "help":
        raise TypeError("train() got the keyword 'help': help(xmltrain.train) and docs/python.md describe the "
                        "keywords, which are `xmltrain train --help`'s flags")


def train_arguments(options, has_test):
    """The argument list after `xmltrain train` for `options`; X and Y stand for --train, X_test
    for --test (their names in messages)."""
    args = ["--train", "X"]
    if has_test:
        args += ["--test", "X_test"]
    for key, value in options.items():
        _check_keyword(key)
        if key in _FILE_FLAGS:
            raise TypeError(f"train() got the keyword '{key}': --{key.replace('_', '-')} names a file, and train() "
                            "takes the data as matrices (X, Y, X_test, Y_test; xmltrain.read(path) reads a file)")
        if value is None:
            continue  # the flag's default
        flag = "--" + key.replace("_", "-")
        values = value if key in _REPEATED and isinstance(value, (list, tuple)) else [value]
        for item in values:
            text = _text(item)
            refuse_null_byte(text, key)  # the engine would read the value up to it
            args += [flag, text]
    return args
