"""Paths handed to the engine. The C++ side reads a name up to its first NUL byte: 'm.xmlt\\0junk'
would open m.xmlt. Python's own open() refuses such a name, and so does the package."""

import os


def checked_path(path, what="path"):
    """os.fspath(path) as str, or ValueError when it holds a NUL byte."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    refuse_null_byte(text, what)
    return text


def refuse_null_byte(text, what):
    if "\0" in text:
        raise ValueError(f"{what} {text!r}: embedded null byte")
