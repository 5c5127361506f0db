"""Alignment readers: every format gives the same colours; focus, residue numbers, alphabets, filters, bad input."""

import gzip

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.families import ALPHABETS, read_alignment
from protein_fixtures import FOCUS, family, write_formats


def _expected(M=60, seed=0):
    _, rows = family(M, seed)
    A = ALPHABETS["protein"]
    return np.array([[A.index(c) for c in r] for r in rows], np.int32)


def test_every_format_gives_the_same_array(tmp_path):
    paths = write_formats(tmp_path)
    ref = _expected()
    for fmt, p in paths.items():
        a = read_alignment(p)
        np.testing.assert_array_equal(a.sequences, ref, err_msg=fmt)
        assert a.ids[0] == "focus/101-120" and a.ids[1] == "seq1", fmt
        np.testing.assert_array_equal(a.residues, np.arange(1, 21))
    assert read_alignment(paths["a3m"]).report["insert_characters_dropped"] == sum(
        2 if k % 2 else 1 for k in range(1, 60)
    )


def test_stockholm_agrees_with_biopython(tmp_path):
    AlignIO = pytest.importorskip("Bio.AlignIO")
    p = write_formats(tmp_path)["stockholm"]
    ours = read_alignment(p)
    rec = AlignIO.read(str(p), "stockholm")
    A = ALPHABETS["protein"]
    raw = [str(r.seq) for r in rec]  # Biopython may write '.' as '-': insert columns hold a lowercase
    ins = {k for r in raw for k, c in enumerate(r) if c.islower()}
    theirs = np.array([[A.index(c) for k, c in enumerate(r) if k not in ins] for r in raw])
    np.testing.assert_array_equal(ours.sequences, theirs)
    assert list(ours.ids) == [r.id for r in rec]


def test_focus_columns_and_residue_numbers(tmp_path):
    # the focus has a gap at match column 3 and an insert residue (lowercase) after column 5
    rows = {"q/101-120": "AC-EFgGHIKL", "s1": "ACDEF-HIKL", "s2": "AXDEF.-GH-K"}
    p = tmp_path / "f.a2m"
    p.write_text("".join(f">{k}\n{v}\n" for k, v in rows.items()))
    a = read_alignment(p, focus="q")
    assert a.focus_id == "q/101-120" and a.focus_sequence == "ACEFGHIKL"
    np.testing.assert_array_equal(a.residues, [101, 102, 103, 104, 106, 107, 108, 109, 110])
    A = ALPHABETS["protein"]
    np.testing.assert_array_equal(a.sequences[2], [A.index(c) for c in "A-EF-GH-K"])  # X -> gap
    assert a.report["unknown_letters_to_gap"] == 1
    assert read_alignment(p, focus="q/101-120").focus_sequence == a.focus_sequence
    b = read_alignment(p)  # no focus: every match column, numbered 1..L
    assert b.L == 10 and b.focus_sequence == "" and list(b.residues) == list(range(1, 11))


def test_equal_length_rows_with_dash_padded_inserts(tmp_path):
    # an insert column padded with '-' (hmmalign output written as FASTA); a lowercase residue in a match column
    p = tmp_path / "h.fasta"
    p.write_text(">q\nAC-DEF\n>r1/11-16\nACgDEF\n>r2\nAC-DeF\n")
    a = read_alignment(p, focus="r1")
    A = ALPHABETS["protein"]
    np.testing.assert_array_equal(a.sequences, [[A.index(c) for c in "ACDEF"]] * 3)
    np.testing.assert_array_equal(a.residues, [11, 12, 14, 15, 16])
    assert a.report["match_rule"] == "columns with an uppercase letter"


def test_filters_and_rna(tmp_path):
    p = tmp_path / "r.fasta"
    p.write_text(">a\nACGU-\n>b\nACGT-\n>c\n--G-A\n")
    a = read_alignment(p, alphabet="rna", max_gap_column=0.5, max_gap_sequence=0.5)
    assert a.alphabet == "-ACGU" and a.report["columns_dropped_gaps"] == 1 and a.report["sequences_dropped_gaps"] == 1
    np.testing.assert_array_equal(a.sequences, [[1, 2, 3, 4], [1, 2, 3, 4]])  # T read as U


def test_lowercase_only_fasta_is_all_match(tmp_path):
    p = tmp_path / "l.fasta"
    p.write_text(">a\nacde\n>b\nac-e\n")
    assert read_alignment(p).sequences.shape == (2, 4)


@pytest.mark.parametrize(
    "text, match",
    [
        (">a\nACDE\n>b\nACD\n", "rows of unequal length"),
        ("", "no sequences"),
        (">a\nAC1E\n>b\nACDE\n", "unknown alignment characters"),
        ("ACDE\n>a\nACDE\n", "before the first"),
    ],
)
def test_bad_alignments(tmp_path, text, match):
    p = tmp_path / "bad.fasta"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        read_alignment(p)


def test_bad_options(tmp_path):
    p = write_formats(tmp_path)["fasta"]
    with pytest.raises(InputError, match="focus: no sequence 'nope'"):
        read_alignment(p, focus="nope")
    with pytest.raises(InputError, match="alphabet: .* not in the rna alphabet"):
        read_alignment(p, alphabet="rna")
    with pytest.raises(InputError, match="alphabet: unknown value"):
        read_alignment(p, alphabet="dna2")
    with pytest.raises(InputError, match="max-gap-column"):
        read_alignment(p, max_gap_column=1.5)
    with pytest.raises(InputError, match="cannot be decompressed"):
        bad = tmp_path / "x.fasta.gz"
        bad.write_bytes(gzip.compress(b">a\nAC")[:12])
        read_alignment(bad)
    assert FOCUS == read_alignment(p, focus="focus").focus_sequence
