#!/usr/bin/env python3
"""Checks docs/cli.md against `xmltrain --help` and `xmltrain SUBCOMMAND --help`.

Usage: check_cli_docs.py XMLTRAIN [docs/cli.md]

Fails (exit 1), naming each flag, when
- a flag of a subcommand's --help has no row in that subcommand's section of docs/cli.md,
- a row of docs/cli.md names a flag that the subcommand's --help does not have,
- a flag whose --help shows a default (`--batch UINT=128`) has another default in docs/cli.md
  (the first `code` span of the row's default cell).
The subcommands are read from `xmltrain --help`; the global flags are the section "Global flags".
A section of docs/cli.md is a `## ` heading: `## Global flags`, or one naming the subcommand in
backticks (`` ## `train` ``); rows under its `### ` headings belong to it. Python 3 stdlib only.
"""
import os
import re
import subprocess
import sys

# A flag line of CLI11's help: two spaces, an optional short name, the long name, then its type
# and default (`--lr TEXT=0.3`, `--inject-fault TEXT ...`, `-o,--output TEXT`, `--one-based`).
HELP_FLAG = re.compile(r"^  (?:-\w,)?(--[A-Za-z0-9][\w-]*)(?:\s+([A-Z]+)(?:=(\S+))?)?")
DOC_ROW = re.compile(r"^\|\s*`(--[A-Za-z0-9][\w-]*)[^`]*`[^|]*\|([^|]*)\|")
GLOBAL = "(global)"


def run_help(binary, args):
    done = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        sys.exit(f"check_cli_docs: `{' '.join(['xmltrain', *args, '--help'])}` exited {done.returncode}: "
                 f"{done.stderr.strip()}")
    return done.stdout


def help_flags(text):
    """{flag: default or None} of one --help text, --help itself left out."""
    flags = {}
    for line in text.splitlines():
        m = HELP_FLAG.match(line)
        if m and m.group(1) != "--help":
            flags[m.group(1)] = m.group(3)
    return flags


def subcommands(text):
    names, inside = [], False
    for line in text.splitlines():
        if line.startswith("Subcommands:"):
            inside = True
        elif inside:
            m = re.match(r"^  (\w[\w-]*)\s", line)
            if m:
                names.append(m.group(1))
            elif line.strip():
                inside = False
    return names


def doc_flags(path):
    """{section: {flag: (default cell, line number)}} of docs/cli.md."""
    sections, current = {}, None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("## "):
                heading = line[3:].strip()
                m = re.match(r"^`(?:xmltrain )?(\w[\w-]*)`", heading)
                current = GLOBAL if heading.lower().startswith("global") else (m.group(1) if m else None)
                if current is not None:
                    sections.setdefault(current, {})
                continue
            m = DOC_ROW.match(line)
            if m and current is not None:
                if m.group(1) in sections[current]:
                    sections[current][m.group(1) + " (again)"] = (m.group(2), number)
                sections[current][m.group(1)] = (m.group(2), number)
    return sections


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    binary = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    doc = sys.argv[2] if len(sys.argv) == 3 else os.path.normpath(os.path.join(here, "..", "docs", "cli.md"))
    top = run_help(binary, [])
    wanted = {GLOBAL: help_flags(top)}
    for sub in subcommands(top):
        wanted[sub] = help_flags(run_help(binary, [sub]))
    if len(wanted) < 2:
        sys.exit("check_cli_docs: no subcommands found in `xmltrain --help`")
    documented = doc_flags(doc)
    problems = []
    for section, flags in wanted.items():
        where = "global flags" if section == GLOBAL else f"`xmltrain {section}`"
        rows = documented.get(section)
        if rows is None:
            problems.append(f"{where}: no section in {doc}")
            continue
        for flag, default in flags.items():
            if flag not in rows:
                problems.append(f"{where}: {flag} is in --help but not in {doc}")
            elif default is not None:
                cell, number = rows[flag]
                code = re.search(r"`([^`]*)`", cell)
                if code is None or code.group(1) != default:
                    shown = code.group(1) if code else cell.strip()
                    problems.append(f"{where}: {flag} defaults to {default} in --help, "
                                    f"but {doc}:{number} says '{shown}'")
        for flag, (_, number) in rows.items():
            if flag.endswith(" (again)"):
                problems.append(f"{where}: {flag[:-8]} has two rows ({doc}:{number})")
            elif flag not in flags:
                problems.append(f"{where}: {flag} is in {doc}:{number} but not in --help")
    for section in documented:
        if section not in wanted:
            problems.append(f"{doc}: section `{section}` is not a subcommand of xmltrain")
    for p in problems:
        print("check_cli_docs:", p, file=sys.stderr)
    if problems:
        return 1
    print(f"check_cli_docs: {sum(len(f) for f in wanted.values())} flags of {len(wanted) - 1} subcommands "
          f"and the global flags match {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
