"""Small hand-made protein data for the alignment / contact tests: one alignment written in every format,
and a PDB chain with known contacts (every distance set by hand)."""

from __future__ import annotations

import gzip

import numpy as np

FOCUS = "ACDEFGHIKLMNPQRSTVWY"  # 20 residues, numbered 101..120 in the alignment (header /101-120)

#: (focus position 1-based) -> contact-atom coordinates; positions on a line 10 A apart, a few moved close
_POS = {k: (10.0 * k, 0.0, 0.0) for k in range(1, 21)}
_POS.update(
    {12: (20.0, 6.0, 0.0), 18: (50.0, 0.0, 7.0), 19: (60.0, 0.0, 7.0), 20: (110.0, 6.5, 0.0), 16: (30.0, 0.0, -7.5)}
)
#: the true contacts (< 8 A) among focus positions, 1-based
CONTACTS = {(2, 12), (5, 18), (3, 16), (6, 19), (11, 20)}
MISSING = 15  # R15 has no coordinates in the structure
MISMATCH = (14, "E")  # Q14 is E in the structure


def _atom(serial, name, res, chain, num, icode, xyz, *, het=False, altloc=" ", occ=1.0):
    rec = "HETATM" if het else "ATOM  "
    nm = f" {name:<3}" if len(name) < 4 else name
    return (
        f"{rec}{serial:5d} {nm}{altloc}{res:>3} {chain}{num:4d}{icode:1}   "
        f"{xyz[0]:8.3f}{xyz[1]:8.3f}{xyz[2]:8.3f}{occ:6.2f}{20.0:6.2f}          {name[0]:>2}\n"
    )


def write_pdb(path):
    """Chain A: the focus protein with Q14E, R15 unresolved, G6 (C-alpha), M11 as MSE (HETATM), an
    insertion code (residue 7 numbered 6A), alternate locations on the C-beta of D3 (A: 0.6 at the
    contact position, B: 0.4 far away), a water and a sulphate; chain B: two residues."""
    three = {
        "A": "ALA",
        "C": "CYS",
        "D": "ASP",
        "E": "GLU",
        "F": "PHE",
        "G": "GLY",
        "H": "HIS",
        "I": "ILE",
        "K": "LYS",
        "L": "LEU",
        "M": "MET",
        "N": "ASN",
        "P": "PRO",
        "Q": "GLN",
        "R": "ARG",
        "S": "SER",
        "T": "THR",
        "V": "VAL",
        "W": "TRP",
        "Y": "TYR",
    }
    lines, n = [], 0
    for k, aa in enumerate(FOCUS, start=1):
        if k == MISSING:
            continue
        if k == MISMATCH[0]:
            aa = MISMATCH[1]
        num, icode = (k, " ") if k <= 6 else ((6, "A") if k == 7 else (k - 1, " "))
        res, het = ("MSE", True) if k == 11 else (three[aa], False)
        x = np.asarray(_POS[k])
        n += 1
        lines.append(_atom(n, "N", res, "A", num, icode, x + (0, 1.4, 1.4), het=het))
        n += 1
        lines.append(_atom(n, "CA", res, "A", num, icode, x + (0, 0, 1.5) if aa != "G" else x, het=het))
        if aa == "G":
            continue
        if k == 3:
            n += 1
            lines.append(_atom(n, "CB", res, "A", num, icode, x, altloc="A", occ=0.6))
            n += 1
            lines.append(_atom(n, "CB", res, "A", num, icode, x + (0, 0, 5.0), altloc="B", occ=0.4))
        else:
            n += 1
            lines.append(_atom(n, "CB", res, "A", num, icode, x, het=het))
    lines.append("TER\n")
    lines.append(_atom(n + 1, "O", "HOH", "A", 201, " ", (0, 0, 0), het=True))
    lines.append(_atom(n + 2, "S", "SO4", "A", 202, " ", (25, 0, 0), het=True))
    lines.append(_atom(n + 3, "CA", "ALA", "B", 1, " ", (500, 0, 0)))
    lines.append(_atom(n + 4, "CA", "GLY", "B", 2, " ", (505, 0, 0)))
    lines.append("END\n")
    with open(path, "w") as fh:
        fh.writelines(lines)
    return path


def family(M=60, seed=0, L=20):
    """(ids, rows) of a toy family: the focus row first, the others mutated copies with gaps."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("ACDEFGHIKLMNPQRSTVWY-"))
    rows, ids = [FOCUS], ["focus/101-120"]
    for m in range(1, M):
        r = np.array(list(FOCUS))
        mut = rng.random(L) < 0.35
        r[mut] = rng.choice(letters, mut.sum())
        rows.append("".join(r))
        ids.append(f"seq{m}")
    return ids, rows


def write_formats(folder, M=60, seed=0):
    """The same alignment as FASTA, A3M (inserts in lowercase and '.'), Stockholm (two interleaved blocks,
    markup lines) and gzipped FASTA; returns {format: path}."""
    ids, rows = family(M, seed)
    paths = {}
    fa = "".join(f">{i} a description\n{r[:10]}\n{r[10:]}\n" for i, r in zip(ids, rows))
    paths["fasta"] = folder / "fam.fasta"
    paths["fasta"].write_text(fa)
    a3m = []
    for k, (i, r) in enumerate(zip(ids, rows)):
        ins = "" if k == 0 else ("kw" if k % 2 else "g")  # A3M: inserts only in non-query rows
        a3m.append(f">{i}\n{r[:7]}{ins}{r[7:]}\n")
    paths["a3m"] = folder / "fam.a3m"
    paths["a3m"].write_text("".join(a3m))
    sto = ["# STOCKHOLM 1.0\n", "#=GF ID toy\n"]
    for half in (slice(0, 12), slice(12, 20)):
        for k, (i, r) in enumerate(zip(ids, rows)):
            seg = r[half]
            if half.start == 0 and k % 3 == 1:
                seg = seg[:5] + "ay" + seg[5:]  # two insert columns, '.' where others have none
            elif half.start == 0:
                seg = seg[:5] + ".." + seg[5:]
            sto.append(f"{i:<20} {seg}\n")
        sto.append("#=GC RF" + " " * 14 + "x" * (len(rows[0][half]) + (2 if half.start == 0 else 0)) + "\n\n")
    sto.append("//\n")
    paths["stockholm"] = folder / "fam.sto"
    paths["stockholm"].write_text("".join(sto))
    paths["gz"] = folder / "fam.fasta.gz"
    paths["gz"].write_bytes(gzip.compress(fa.encode()))
    return paths
