#!/usr/bin/env python3
"""Checks the house's layers: no file includes a header of a room above its own, and no two
files (a header and its source taken as one) include each other's headers.

The rooms and their floors are the ```layers block of docs/ARCHITECTURE.md: one floor a line, the
top floor first, the rooms of a floor separated by spaces. A room is a folder; a file belongs to
the deepest room that holds it. A file may include headers of its own room and of the floors
below; two rooms of one floor may not include each other. Only quoted includes that name a file of
the checkout are read ("data/dataset.h"); system and library headers are not the house's.

Usage: scripts/check_layers.py [--root DIR] [--architecture FILE]   (exit 1 and one line per finding, or exit 0)
"""
import argparse
import re
import sys
from pathlib import Path

SOURCE_SUFFIXES = {".h", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_floors(architecture):
    """The ```layers block: a list of floors, lowest first, each a list of rooms."""
    text = architecture.read_text()
    block = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if not block:
        sys.exit(f"check-layers: {architecture} has no ```layers block")
    floors = [line.split("#")[0].split() for line in block.group(1).splitlines()]
    floors = [rooms for rooms in floors if rooms]
    return list(reversed(floors))


def room_of(path, rooms):
    """The deepest room holding `path` (a path relative to the root), or None."""
    best = None
    for room in rooms:
        if path.startswith(room + "/") and (best is None or len(room) > len(best)):
            best = room
    return best


def check(root, architecture=None):
    floors = read_floors(architecture or root / "docs" / "ARCHITECTURE.md")
    floor_of = {room: level for level, rooms in enumerate(floors) for room in rooms}
    findings = []
    # unit (a path without its suffix: a header and its source) -> {included unit: first line}
    unit_includes = {}
    for room in sorted(floor_of):
        if not (root / room).is_dir():
            findings.append(f"docs/ARCHITECTURE.md: the room {room}/ of the layers block does not exist")
            continue
        for file in sorted((root / room).rglob("*")):
            if file.suffix not in SOURCE_SUFFIXES or not file.is_file():
                continue
            path = file.relative_to(root).as_posix()
            own = room_of(path, floor_of)
            if own != room:
                continue  # a deeper room's file, read when that room is
            unit = path.rsplit(".", 1)[0]
            for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match or not (root / match.group(1)).is_file():
                    continue
                header = match.group(1)
                where = f"{path}:{number}"
                target = room_of(header, floor_of)
                if target is None:
                    findings.append(f"{where}: includes {header}, which is in no room of the layers block")
                    continue
                if target != own and floor_of[target] >= floor_of[own]:
                    relation = "above" if floor_of[target] > floor_of[own] else "on the same floor as"
                    findings.append(f"{where}: {own}/ includes {header}, of {target}/, a room {relation} its own")
                included = header.rsplit(".", 1)[0]
                if included != unit:
                    unit_includes.setdefault(unit, {}).setdefault(included, where)
    for unit, included in sorted(unit_includes.items()):
        for other, where in sorted(included.items()):
            if unit < other and unit in unit_includes.get(other, {}):
                findings.append(f"{where} and {unit_includes[other][unit]}: {unit} and {other} include each "
                                "other's headers")
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout to check (default: this one)")
    parser.add_argument("--architecture", type=Path, help="the file with the layers block "
                        "(default: ROOT/docs/ARCHITECTURE.md)")
    args = parser.parse_args()
    findings = check(args.root, args.architecture)
    for finding in findings:
        print(finding)
    sys.stdout.flush()
    if findings:
        print(f"check-layers: {len(findings)} finding(s); the layers are in docs/ARCHITECTURE.md (Layers)",
              file=sys.stderr)
        return 1
    print("check-layers: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
