#!/usr/bin/env python3
"""Issue: reliability, fifth round, row 15. docs/training.md's table of the defaults beside the XML
libraries contradicted the README's "Today's figures" (older runs, before the shortlist ranker)
and still said EURLEX57K was "1.8 to 2.3 points below Bonsai". Each set's figures in the one must
be the other's: xmltrain's P@1 / P@3 / P@5 and PSP@1 / PSP@5, and the best library's.

Usage: docs_figures_test.py [SOURCE_DIR]. Python 3 stdlib only; reads the two files, runs nothing.
"""
import pathlib
import re
import sys

SETS = {"Bibtex": "Bibtex (test)", "Delicious": "Delicious (test)", "EURLEX57K": "EURLEX57K (val"}
NUMBER = re.compile(r"\d+\.\d+")
# A README cell may add a run's cost ("in 88.8 s and 1,056 MiB"); docs/training.md's table has none.
COST = re.compile(r"\bin [\d.,]+ s and [\d.,]+ MiB")


def readme_figures(text):
    """{set: [numbers]} from the README's rows "| SET (...), P@1 ... | xmltrain a / b / c, d / e; best ... |"."""
    figures = {}
    for line in text.splitlines():
        for name, start in SETS.items():
            if line.startswith("| " + start):
                cells = line.split("|")
                figures[name] = NUMBER.findall(COST.sub("", cells[2]))
    return figures


def training_figures(text):
    """{set: [numbers]} from docs/training.md's table of the defaults beside the libraries, in the
    README's order: xmltrain's P@k, PSP@k, then the best library's P@k, PSP@k."""
    figures = {}
    for line in text.splitlines():
        for name, start in SETS.items():
            if line.startswith("| " + start):
                cells = [NUMBER.findall(cell) for cell in line.split("|")[2:6]]
                if all(cells):
                    figures[name] = cells[0] + cells[2] + cells[1] + cells[3]
    return figures


def main():
    source = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    readme = readme_figures((source / "README.md").read_text())
    training_text = (source / "docs" / "training.md").read_text()
    training = training_figures(training_text)
    failures = []
    for name in SETS:
        if name not in readme:
            failures.append(f"README.md has no {name} row in Today's figures")
        elif readme[name] != training.get(name):
            failures.append(f"{name}: README.md says {readme[name]}, docs/training.md {training.get(name)}")
    if "below Bonsai" in training_text:
        failures.append("docs/training.md still says the defaults are below Bonsai")
    for failure in failures:
        print(f"docs_figures_test: FAIL: {failure}", file=sys.stderr)
    if not failures:
        print("docs_figures_test: OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
