"""Multiple sequence alignments in: FASTA, A2M/A3M and Stockholm, plain or gzipped (docs/potts_proteins.md §1).

Conventions (project choices, written in docs/potts_proteins.md):

* **Alphabet.** A string whose character i is colour i, the gap ``-`` first: protein
  ``-ACDEFGHIKLMNPQRSTVWY`` (C = 21, plmc's order), RNA ``-ACGU`` (C = 5; ``T`` is read as ``U``).
  Letters outside the alphabet (``X``, ``B``, ``Z``, ``J``, ``O``, ``U`` for proteins, ``N`` for RNA) become
  the gap and are counted in the report; a file in which more than half of the residues are outside the
  alphabet is refused (the wrong ``--alphabet``, or not an alignment of that kind).
* **Match columns.** Rows of different raw lengths (A3M): uppercase letters and ``-`` are match
  columns, lowercase letters and ``.`` are inserts and are dropped, and the rows must then have one length.
  Rows of one raw length (aligned FASTA, A2M, Stockholm): a column is a match column when it holds an
  uppercase letter in some row; the others (lowercase and gaps only: insert columns, whether padded with
  ``.`` or ``-``) are dropped, and a lowercase letter in a match column is read as its residue.  A file
  with no uppercase letter at all is read as all-match (an aligned FASTA written in lowercase).
* **Focus sequence** (plmc ``-f``): with ``focus = ID`` (the first word of a header, with or without its
  ``/start-end`` suffix) only the match columns where that sequence has a residue are kept; model column k
  is then the focus residue numbered ``start + (residues of the focus before it)``, ``start`` taken from the
  header's ``/start-end`` (1 without one).  Without a focus every match column is kept, numbered 1..L.
* **Filters** (off by default): columns with a gap fraction above ``max_gap_column`` and then sequences
  with a gap fraction above ``max_gap_sequence`` are dropped; both counts are in the report.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._errors import InputError, one_of, require

#: colour i = character i; the gap is colour 0 (plmc's protein order)
ALPHABETS = {"protein": "-ACDEFGHIKLMNPQRSTVWY", "rna": "-ACGU"}
#: alignment formats :func:`read_alignment` reads (``fmt``; detected from the file when not given)
FORMATS = ("fasta", "a2m", "a3m", "stockholm")
_EXT = {
    ".fasta": "fasta",
    ".fa": "fasta",
    ".fas": "fasta",
    ".afa": "fasta",
    ".faa": "fasta",
    ".aln": "fasta",
    ".a2m": "a2m",
    ".a3m": "a3m",
    ".sto": "stockholm",
    ".sth": "stockholm",
    ".stk": "stockholm",
    ".stockholm": "stockholm",
}
_RANGE = re.compile(r"^(?P<name>.+)/(?P<start>-?\d+)-(?P<end>-?\d+)$")


@dataclass(frozen=True)
class Alignment:
    """An alignment as colours: ``sequences`` (M, L) int32 in [0, C), C = len(alphabet), gap = 0.

    ``residues`` (L,): the focus residue number of each model column (1..L without a focus);
    ``focus_sequence``: the focus row's letters at the kept columns ('' without a focus);
    ``report``: what reading did (format, raw size, inserts, unknown letters, filters)."""

    sequences: np.ndarray
    ids: tuple
    alphabet: str
    focus_id: str = ""
    focus_sequence: str = ""
    residues: np.ndarray = field(default=None)
    report: dict = field(default_factory=dict)

    @property
    def M(self) -> int:
        return int(self.sequences.shape[0])

    @property
    def L(self) -> int:
        return int(self.sequences.shape[1])

    @property
    def C(self) -> int:
        return len(self.alphabet)


def _open_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path.name}: cannot be decompressed ({type(exc).__name__})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path.name}: is not a text alignment (not UTF-8)") from None


def detect_format(path, text: str) -> str:
    """The format from the extension (``.gz`` stripped), else from the first line."""
    p = Path(path)
    ext = Path(p.stem).suffix.lower() if p.suffix.lower() == ".gz" else p.suffix.lower()
    if ext in _EXT:
        return _EXT[ext]
    head = text.lstrip()[:11].upper()
    if head.startswith("# STOCKHOLM"):
        return "stockholm"
    if head.startswith(">"):
        return "fasta"
    raise InputError(
        f"{p.name}: unknown alignment format (expected FASTA/A2M/A3M starting with '>' or "
        f"Stockholm starting with '# STOCKHOLM')"
    )


def parse_fasta(text: str, name: str = "alignment") -> list[tuple[str, str]]:
    """(header, raw row) pairs of a FASTA/A2M/A3M text; the header is the line after '>' stripped."""
    records, head, chunks = [], None, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith(">"):
            if head is not None:
                records.append((head, "".join(chunks)))
            head, chunks = line[1:].strip(), []
        else:
            require(head is not None, name, "sequence data before the first '>' header")
            chunks.append(line.replace(" ", ""))
    if head is not None:
        records.append((head, "".join(chunks)))
    return records


def parse_stockholm(text: str, name: str = "alignment") -> list[tuple[str, str]]:
    """(name, raw row) pairs of the first alignment of a Stockholm text (interleaved blocks joined)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            break
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        require(len(parts) == 2, name, f"malformed Stockholm line {s[:40]!r}")
        rows.setdefault(parts[0], []).append(parts[1])
    return [(k, "".join(v)) for k, v in rows.items()]


def _match_masks(raws: list[str], all_match: bool) -> tuple[str, object]:
    """The convention of the file (module docstring) and a function raw row -> per-character match flags."""
    if all_match:
        return "all-match", lambda raw: [True] * len(raw)
    if len({len(r) for r in raws}) == 1:
        arr = np.frombuffer("".join(raws).encode("latin-1", errors="replace"), np.uint8).reshape(len(raws), -1)
        cols = ((arr >= ord("A")) & (arr <= ord("Z"))).any(0).tolist()
        return "columns with an uppercase letter", lambda raw: cols
    return "uppercase and '-' (lowercase and '.' are inserts)", lambda raw: [not (c.islower() or c == ".") for c in raw]


def _residue_numbers(header: str, raw: str, flags) -> tuple[str, list[int]]:
    """(the first word without /start-end, residue number of each match column, -1 where it has no residue)."""
    word = header.split()[0] if header.split() else header
    m = _RANGE.match(word)
    start = int(m.group("start")) if m else 1
    nums, k = [], start
    for c, is_match in zip(raw, flags):
        if is_match:
            nums.append(k if c.isalpha() else -1)
        if c.isalpha():
            k += 1
    return (m.group("name") if m else word), nums


def encode(rows, alphabet: str) -> tuple[np.ndarray, int, int]:
    """Rows of letters -> (M, L) colours; letters outside the alphabet -> gap.  Returns (array, unknown
    letters, residues).  RNA reads T as U."""
    lut = np.zeros(256, np.int32)  # everything unknown -> gap (0)
    known = np.zeros(256, bool)
    for i, ch in enumerate(alphabet):
        lut[ord(ch)] = i
        known[ord(ch)] = True
    if alphabet == ALPHABETS["rna"]:
        lut[ord("T")], known[ord("T")] = alphabet.index("U"), True
    buf = np.frombuffer("".join(rows).encode("latin-1", errors="replace"), np.uint8).reshape(len(rows), -1)
    letters = buf != ord("-")
    unknown = int(np.sum(letters & ~known[buf]))
    return lut[buf].astype(np.int32), unknown, int(letters.sum())


def read_alignment(
    path,
    *,
    alphabet: str = "protein",
    focus: str | None = None,
    fmt: str | None = None,
    max_gap_column: float | None = None,
    max_gap_sequence: float | None = None,
) -> Alignment:
    """Read an alignment file (FASTA, A2M/A3M, Stockholm; gzipped or not) into colours.

    ``alphabet``: ``"protein"`` or ``"rna"`` (a key of :data:`ALPHABETS`); ``focus``: the ID of the focus
    sequence (module docstring); ``max_gap_column`` / ``max_gap_sequence``: optional gap-fraction filters
    in [0, 1].  Every failure is one :class:`InputError` line naming the file or the option."""
    p = Path(path)
    one_of(alphabet, ALPHABETS, "alphabet")
    for opt, v in (("max-gap-column", max_gap_column), ("max-gap-sequence", max_gap_sequence)):
        require(v is None or (np.isfinite(v) and 0 <= v <= 1), opt, f"must be in [0, 1], got {v}")
    require(p.is_file(), p.name or "alignment", f"file not found: {p}")
    text = _open_text(p)
    fmt = detect_format(p, text) if fmt is None else one_of(fmt, FORMATS, "format")
    records = parse_stockholm(text, p.name) if fmt == "stockholm" else parse_fasta(text, p.name)
    require(len(records) > 0, p.name, "has no sequences")
    all_match = not any(c.isupper() for _, raw in records for c in raw)
    bad = {c for _, raw in records for c in set(raw) if not (c.isalpha() or c in "-.*")}
    require(not bad, p.name, f"unknown alignment characters {''.join(sorted(bad))[:10]!r} (not letters, '-' or '.')")
    raws = [raw.replace("*", "") for _, raw in records]
    rule, flags_of = _match_masks(raws, all_match)
    rows = []
    for raw in raws:
        fl = flags_of(raw)
        rows.append("".join(c for c, f in zip(raw, fl) if f).upper().replace(".", "-"))
    width = len(rows[0])
    for (h, _), r in zip(records, rows):
        require(
            len(r) == width,
            p.name,
            f"rows of unequal length: {h.split()[0] if h.split() else h!r} has "
            f"{len(r)} match columns, the first row {width}",
        )
    require(width > 0, p.name, "has no match columns (all lowercase inserts?)")
    ids = tuple(h.split()[0] if h.split() else h for h, _ in records)
    report = {
        "file": p.name,
        "format": fmt,
        "sequences_read": len(rows),
        "match_columns": width,
        "match_rule": rule,
        "insert_characters_dropped": int(sum(len(raw) - len(r) for raw, r in zip(raws, rows))),
    }
    cols = np.arange(width)
    residues = np.arange(1, width + 1)
    focus_id, focus_row = "", None
    if focus is not None:
        require(bool(focus), "focus", "is empty")
        hits = [k for k, (h, raw) in enumerate(records) if ids[k] == focus or _RANGE.sub(r"\g<name>", ids[k]) == focus]
        require(len(hits) > 0, "focus", f"no sequence {focus!r} in {p.name}")
        k = hits[0]
        _, nums = _residue_numbers(records[k][0], raws[k], flags_of(raws[k]))
        nums = np.asarray(nums)
        cols = np.flatnonzero(nums >= 0)
        require(cols.size >= 2, "focus", f"{focus!r} has fewer than 2 residues in the match columns of {p.name}")
        residues, focus_id, focus_row = nums[cols], ids[k], k
        report["focus_columns"] = int(cols.size)
    s, unknown, letters = encode([r for r in rows], ALPHABETS[alphabet])
    require(
        letters == 0 or unknown <= 0.5 * letters,
        "alphabet",
        f"{unknown} of {letters} residues of {p.name} are not in the {alphabet} alphabet {ALPHABETS[alphabet][1:]!r}",
    )
    report["unknown_letters_to_gap"] = unknown
    s = s[:, cols]
    keep_rows = np.arange(len(rows))
    if max_gap_column is not None:
        ok = (s == 0).mean(0) <= max_gap_column
        report["columns_dropped_gaps"] = int((~ok).sum())
        s, residues, cols = s[:, ok], residues[ok], cols[ok]
        require(s.shape[1] >= 2, "max-gap-column", f"leaves {s.shape[1]} columns of {p.name}")
    if max_gap_sequence is not None:
        ok = (s == 0).mean(1) <= max_gap_sequence
        if focus_row is not None:
            ok[focus_row] = True  # the focus row is never dropped
        report["sequences_dropped_gaps"] = int((~ok).sum())
        s, keep_rows = s[ok], keep_rows[ok]
        require(s.shape[0] >= 1, "max-gap-sequence", f"leaves no sequence of {p.name}")
    focus_seq = "" if focus_row is None else "".join(rows[focus_row][c] for c in cols).upper()
    report.update(M=int(s.shape[0]), L=int(s.shape[1]))
    return Alignment(
        np.ascontiguousarray(s, np.int32),
        tuple(ids[k] for k in keep_rows),
        ALPHABETS[alphabet],
        focus_id,
        focus_seq,
        np.asarray(residues, np.int64),
        report,
    )


__all__ = [
    "ALPHABETS",
    "FORMATS",
    "Alignment",
    "read_alignment",
    "parse_fasta",
    "parse_stockholm",
    "detect_format",
    "encode",
]
