#!/usr/bin/env python3
"""What compare-peers.sh installs for the systems it is asked to run: the pinned packages and the
modules that show they are there. Only the chosen systems' libraries are installed: `--systems
xmltrain` needs numpy and scipy (the scoring), not libpecos and the PyTorch it brings (about 6 GB).

  peer_requirements.py pins|modules SYSTEMS
  SYSTEMS: comma-separated, from pecos, omikuji, bonsai, napkinxc, xmltrain, xmltrain-before.
Prints the pins (or the modules) one a line; an unknown system exits 2 naming it. Stdlib only: it
runs before the venv exists.
"""
import sys

# The versions the published comparison was made with. libpecos 1.2.8 asks for numpy < 2 and
# scipy < 1.14: the newer pins of the first tables (numpy 2.4.6, scipy 1.17.1) do not resolve.
SCORING = [("numpy==1.26.4", "numpy"), ("scipy==1.13.1", "scipy")]
LIBRARIES = {
    "pecos": [("libpecos==1.2.8", "pecos")],
    "omikuji": [("omikuji==0.5.2", "omikuji")],
    "bonsai": [("omikuji==0.5.2", "omikuji")],
    "napkinxc": [("napkinxc==0.7.2", "napkinxc")],
    "xmltrain": [],
    "xmltrain-before": [],
}


def requirements(systems):
    """[(pin, module)] for the systems, the scoring's first, each once."""
    chosen = list(SCORING)
    for system in systems:
        if system not in LIBRARIES:
            raise ValueError(f"unknown system '{system}' (known: {', '.join(LIBRARIES)})")
        for requirement in LIBRARIES[system]:
            if requirement not in chosen:
                chosen.append(requirement)
    return chosen


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("pins", "modules"):
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    try:
        chosen = requirements([s for s in sys.argv[2].split(",") if s])
    except ValueError as e:
        print(f"compare-peers.sh: --systems: {e}", file=sys.stderr)
        return 2
    for pin, module in chosen:
        print(pin if sys.argv[1] == "pins" else module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
