#!/usr/bin/env python
"""Regenerate the tables of numbers in README.md and docs/*.md from the JSON files behind them.

A generated table sits between two markers in a Markdown file::

    <!-- table: NAME -->
    | ... the table, written by scripts/tables/NAME.py ... |
    <!-- /table -->

``scripts/tables/NAME.py`` defines ``render() -> str``: it reads JSON files written by scripts of
this repository (``docs/figures/*.json``, ``benchmarks/*/results.json``, ...) and returns the
Markdown between the markers.  Nothing between markers is ever typed by hand.

    python scripts/gen_docs.py           # rewrite every block in place
    python scripts/gen_docs.py --check   # exit 1 and name the blocks that differ (tests/test_docs.py)
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "scripts" / "tables"
BLOCK = re.compile(r"(<!-- table: ([A-Za-z0-9_]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def documents() -> list[Path]:
    """Markdown files that may hold generated tables."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def render(name: str) -> str:
    """Markdown of table ``name`` (``scripts/tables/NAME.py:render``), ending in a newline."""
    path = TABLES / f"{name}.py"
    if not path.is_file():
        raise SystemExit(f"error: no generator {path.relative_to(ROOT)} for table {name!r}")
    spec = importlib.util.spec_from_file_location(f"_table_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = mod.render()
    return text if text.endswith("\n") else text + "\n"


def regenerate(text: str) -> tuple[str, list[str]]:
    """``text`` with every table block re-rendered, and the names of the blocks that changed."""
    changed = []

    def sub(m):
        new = render(m.group(2))
        if new != m.group(3):
            changed.append(m.group(2))
        return m.group(1) + new + m.group(4)

    return BLOCK.sub(sub, text), changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 when a document differs")
    args = ap.parse_args(argv)
    drift = []
    for doc in documents():
        if not doc.is_file():
            continue
        old = doc.read_text()
        new, changed = regenerate(old)
        if changed:
            drift += [f"{doc.relative_to(ROOT)}: {name}" for name in changed]
            if not args.check:
                doc.write_text(new)
    if args.check and drift:
        print("tables that differ from what their generators write (run python scripts/gen_docs.py):")
        print("\n".join(f"  {d}" for d in drift))
        return 1
    if not args.check:
        print(f"regenerated {len(drift)} table(s)" + (": " + ", ".join(drift) if drift else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
