"""Documents generated from data: the tables of numbers in README.md and docs/*.md are
written by scripts/tables/NAME.py from JSON files of this repository, and cannot drift."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OPEN = re.compile(r"^<!-- table: ([A-Za-z0-9_]+) -->$")
CLOSE = "<!-- /table -->"
CITED = re.compile(r"docs/([a-z_]+)\.md")
#: where documents are cited: the package (CLI help included), examples, scripts, benchmarks, configs, README, docs
CITING = ["bayes_attn", "examples", "scripts", "benchmarks", "configs", "README.md", "docs"]
SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt"}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def numbers_outside_tables(text: str) -> list[tuple[int, str]]:
    """Lines of a Markdown table (starting with ``|``) that hold a digit and lie outside every
    ``<!-- table: NAME -->`` ... ``<!-- /table -->`` block, as (line number, line); fenced code is
    not a table.  Raises ``ValueError`` on an unclosed or nested block."""
    bad, inside, fence = [], None, False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        m = OPEN.match(line.strip())
        if m:
            if inside is not None:
                raise ValueError(f"line {i}: table block {m.group(1)!r} opened inside block {inside!r}")
            inside = m.group(1)
        elif line.strip() == CLOSE:
            if inside is None:
                raise ValueError(f"line {i}: {CLOSE} without an opening marker")
            inside = None
        elif inside is None and line.startswith("|") and re.search(r"\d", line):
            bad.append((i, line))
    if inside is not None:
        raise ValueError(f"table block {inside!r} is not closed")
    return bad


def test_numbers_outside_tables_on_a_synthetic_document():
    doc = "\n".join(
        [
            "# title 1",
            "",
            "| a | b |",
            "|---|---|",
            "| x | y |",  # a table without numbers: fine
            "<!-- table: t -->",
            "| N | acc |",
            "|---|---|",
            "| 10 | 96.2 |",
            "<!-- /table -->",
            "| N | acc |",
            "|---|---|",
            "| 30 | 95.5 |",  # hand-typed numbers: caught
            "```",
            "| 1 | 2 |",
            "```",  # fenced code is not a table
        ]
    )
    assert numbers_outside_tables(doc) == [(13, "| 30 | 95.5 |")]
    assert numbers_outside_tables(doc.replace("| 30 | 95.5 |", "| x | y |")) == []
    with pytest.raises(ValueError, match="not closed"):
        numbers_outside_tables("<!-- table: t -->\n| 1 |\n")
    with pytest.raises(ValueError, match="without an opening"):
        numbers_outside_tables("| a |\n<!-- /table -->\n")


def test_results_has_no_table_of_numbers_outside_a_generated_block():
    bad = numbers_outside_tables((ROOT / "docs" / "results.md").read_text())
    assert not bad, "hand-written table rows with numbers in docs/results.md (generate them):\n" + "\n".join(
        f"  line {i}: {line[:100]}" for i, line in bad
    )


def test_every_table_marker_names_an_existing_generator():
    missing = []
    for doc in _documents():
        text = doc.read_text()
        numbers_outside_tables(text)  # balanced markers
        for line in text.splitlines():
            m = OPEN.match(line.strip())
            if m and not (ROOT / "scripts" / "tables" / f"{m.group(1)}.py").is_file():
                missing.append(f"{doc.relative_to(ROOT)}: {m.group(1)}")
    assert not missing, "table markers without scripts/tables/NAME.py: " + ", ".join(missing)


def test_generated_documents_match_their_generators():
    gen_docs = _load(ROOT / "scripts" / "gen_docs.py", "_gen_docs_under_test")
    assert gen_docs.main(["--check"]) == 0, "run: python scripts/gen_docs.py"


def test_a_generator_without_its_json_raises(tmp_path, monkeypatch):
    common = _load(ROOT / "scripts" / "tables" / "_common.py", "_tables_common_under_test")
    monkeypatch.setattr(common, "ROOT", tmp_path)
    with pytest.raises(FileNotFoundError, match="missing: it is written by examples/x.py"):
        common.figure("x.json", "examples/x.py")


def test_every_cited_document_exists():
    missing = set()
    for top in CITING:
        path = ROOT / top
        files = (
            [path]
            if path.is_file()
            else [p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
        )
        for f in files:
            for m in CITED.finditer(f.read_text(errors="replace")):
                if not (ROOT / "docs" / f"{m.group(1)}.md").is_file():
                    missing.add(f"{f.relative_to(ROOT)} cites docs/{m.group(1)}.md")
    assert not missing, "cited documents that do not exist:\n" + "\n".join(sorted(missing))


def test_documents_hold_no_control_characters():
    """No carriage return, tab or other control character in README.md and docs/*.md: a LaTeX escape written
    through a Python string (``\\rm``, ``\\theta``) once became one, breaking the formula it was in."""
    for path in _documents():
        for n, line in enumerate(
            path.read_bytes().decode("utf-8").split("\n"), 1
        ):  # bytes: a lone carriage return stays one
            bad = sorted({f"U+{ord(c):04X}" for c in line if ord(c) < 32 or ord(c) == 127})
            assert not bad, f"{path.relative_to(ROOT)}:{n}: control characters {bad}"


#: a document states what is, not when it was decided: no issue named by its number ("issue 16", "Issue #7") or
#: as "the issue" (the one the text was written for), and no ISO date ("2026-11-30"); history lives in
#: CHANGELOG.md and git
DATED = re.compile(r"\bissue\s+#?\d+|\bthe\s+issue\b|\b\d{4}-\d{2}-\d{2}\b", re.IGNORECASE)


def dated_lines(text: str) -> list[tuple[int, list[str]]]:
    """``(line number, what matched)`` of every line of ``text`` that names an issue by number or holds an ISO date."""
    return [(n, DATED.findall(line)) for n, line in enumerate(text.splitlines(), 1) if DATED.search(line)]


def test_documents_name_no_issue_numbers_and_no_dates():
    """README.md and docs/*.md state the present: an issue number or a date says when something was decided or
    measured, which CHANGELOG.md and git keep."""
    planted = (
        "A clean line: 3 issues, a known issue, 12 draws in 2026 words, 20-30 s, 1e-6.\n"
        "see issue 12\n"
        "Measured 2026-11-30 on 2 cores.\n"
        "Issue #7 and ISSUE 3 alike\n"
        "against the issue's hour per case\n"
    )
    assert dated_lines(planted) == [
        (2, ["issue 12"]),
        (3, ["2026-11-30"]),
        (4, ["Issue #7", "ISSUE 3"]),
        (5, ["the issue"]),
    ]
    assert dated_lines("see issue 12") and dated_lines("2026-11-30") and not dated_lines(planted.splitlines()[0])
    bad = [
        f"{p.relative_to(ROOT)}:{n}: {', '.join(found)}"
        for p in _documents()
        for n, found in dated_lines(p.read_text())
    ]
    assert not bad, "documents that say when, not what (history belongs in CHANGELOG.md):\n" + "\n".join(bad)
