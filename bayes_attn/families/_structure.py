"""True contacts from a structure of the focus protein (docs/potts_proteins.md §3).

The structure is read with Biopython's ``Bio.PDB`` (PDB or mmCIF, first model; an optional dependency,
``pip install 'bayes_attn[bio]'``).  Residues of the chain are the amino acids with a CA atom, standard
or modified (MSE -> M and the other modified residues Biopython maps to a parent), in file order with
their insertion codes; for an atom with alternate locations Biopython keeps the highest occupancy.
The chain's sequence is aligned to the focus sequence (global, BLOSUM62, gap open -10, extend -0.5,
free end gaps); a focus residue without an aligned structure residue is *unresolved*.  Distance of two
residues: C-beta to C-beta (C-alpha for glycine, and for a residue whose C-beta is missing, which is
reported); contact below 8 Angstrom.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._errors import InputError, require

#: contact cut-off (Angstrom) between C-beta atoms (C-alpha for glycine)
CONTACT_CUTOFF = 8.0
#: the alignment of the chain to the focus sequence must reach this identity over the aligned pairs
MIN_IDENTITY = 0.5


def _bio():
    try:
        import Bio.PDB  # noqa: F401
        from Bio import Align  # noqa: F401
    except ImportError:
        raise InputError("structure: reading structures needs Biopython (pip install 'bayes_attn[bio]')") from None
    import Bio.PDB
    from Bio import Align

    return Bio.PDB, Align


@dataclass(frozen=True)
class ChainResidues:
    """The chain's amino-acid residues: one-letter ``sequence``, ``labels`` (number + insertion code),
    ``coords`` (n, 3) of the contact atom, ``no_cb`` labels of non-glycines measured at C-alpha."""

    sequence: str
    labels: tuple
    coords: np.ndarray
    no_cb: tuple
    modified: tuple


def read_chain(path, chain: str) -> ChainResidues:
    """The residues of ``chain`` in the first model of a PDB / mmCIF file (module docstring)."""
    PDB, _ = _bio()
    from Bio.Data.PDBData import protein_letters_3to1_extended as three_to_one

    p = Path(path)
    require(p.is_file(), "structure", f"file not found: {p}")
    cif = p.suffix.lower() in (".cif", ".mmcif") or p.name.lower().endswith((".cif.gz", ".mmcif.gz"))
    parser = PDB.MMCIFParser(QUIET=True) if cif else PDB.PDBParser(QUIET=True)
    try:
        if p.suffix.lower() == ".gz":
            import gzip
            import io

            with gzip.open(p, "rt") as fh:
                text = fh.read()
            model = next(iter(parser.get_structure("s", io.StringIO(text))))
        else:
            model = next(iter(parser.get_structure("s", str(p))))
    except (StopIteration, ValueError, KeyError, IndexError, OSError) as exc:
        raise InputError(f"structure: cannot read {p.name} ({type(exc).__name__})") from None
    chains = [c.id for c in model]
    require(chain in chains, "chain", f"{chain!r} is not in {p.name} (chains: {', '.join(chains) or 'none'})")
    seq, labels, coords, no_cb, modified = [], [], [], [], []
    for res in model[chain]:
        het, num, icode = res.id
        name = res.get_resname().strip().upper()
        if het == "W" or "CA" not in res or name not in three_to_one:
            continue
        letter = three_to_one[name]
        label = f"{num}{icode.strip()}"
        if het.startswith("H_"):
            modified.append(f"{label}:{name}")
        if name == "GLY" or letter == "G":
            atom = res["CA"]
        elif "CB" in res:
            atom = res["CB"]
        else:
            atom = res["CA"]
            no_cb.append(label)
        seq.append(letter)
        labels.append(label)
        coords.append(atom.coord)
    require(len(seq) > 0, "chain", f"{chain!r} of {p.name} has no amino-acid residues")
    return ChainResidues("".join(seq), tuple(labels), np.asarray(coords, float), tuple(no_cb), tuple(modified))


def align_to_focus(focus: str, chain_seq: str) -> tuple[np.ndarray, dict]:
    """Map each focus position to a chain residue index (-1: unresolved) and report the alignment."""
    _, Align = _bio()
    require(len(focus) > 0, "focus", "the fit has no focus sequence (fit an alignment with --focus ID)")
    aligner = Align.PairwiseAligner(mode="global")
    aligner.substitution_matrix = Align.substitution_matrices.load("BLOSUM62")
    aligner.open_gap_score, aligner.extend_gap_score = -10.0, -0.5
    aligner.end_gap_score = 0.0
    f = focus.upper().replace("-", "X")
    aln = aligner.align(f, chain_seq)[0]
    mapping = np.full(len(focus), -1, int)
    for (a0, a1), (b0, b1) in zip(*aln.aligned):
        mapping[a0:a1] = np.arange(b0, b1)
    paired = np.flatnonzero(mapping >= 0)
    same = np.array([focus[k].upper() == chain_seq[mapping[k]] for k in paired], bool)
    identity = float(same.mean()) if paired.size else 0.0
    report = {
        "aligned": int(paired.size),
        "identity": identity,
        "mismatches": [f"{focus[k]}{k + 1}{chain_seq[mapping[k]]}" for k in paired[~same]],
        "unresolved": int((mapping < 0).sum()),
    }
    require(
        paired.size >= min(10, len(focus)) and identity >= MIN_IDENTITY,
        "structure",
        f"the chain's sequence does not align to the focus sequence (identity {identity:.0%} over "
        f"{paired.size} aligned residues)",
    )
    return mapping, report


def contact_map(path, chain: str, focus: str, cutoff: float = CONTACT_CUTOFF):
    """(contacts (L, L) bool, known (L,) bool, distances (L, L) with NaN where unknown, report) for the
    ``L = len(focus)`` focus positions."""
    res = read_chain(path, chain)
    mapping, report = align_to_focus(focus, res.sequence)
    known = mapping >= 0
    X = np.full((len(focus), 3), np.nan)
    X[known] = res.coords[mapping[known]]
    D = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=-1)
    C = np.nan_to_num(D, nan=np.inf) < cutoff
    np.fill_diagonal(C, False)
    report.update(
        chain=chain,
        chain_residues=len(res.sequence),
        measured_at_CA=list(res.no_cb),
        modified_residues=list(res.modified),
        cutoff=cutoff,
        atoms="CB (CA for glycine and for residues without CB)",
    )
    return C, known, D, report


def read_chain_ids(path) -> list[str]:
    """Chain IDs of the first model, in file order (the default chain is the first)."""
    p = Path(path)
    require(p.is_file(), "structure", f"file not found: {p}")
    PDB, _ = _bio()
    cif = p.suffix.lower() in (".cif", ".mmcif")
    parser = PDB.MMCIFParser(QUIET=True) if cif else PDB.PDBParser(QUIET=True)
    try:
        ids = [c.id for c in next(iter(parser.get_structure("s", str(p))))]
    except (StopIteration, ValueError, KeyError, IndexError, OSError) as exc:
        raise InputError(f"structure: cannot read {p.name} ({type(exc).__name__})") from None
    require(len(ids) > 0, "structure", f"{p.name} has no chains")
    return ids


__all__ = [
    "CONTACT_CUTOFF",
    "MIN_IDENTITY",
    "ChainResidues",
    "read_chain",
    "read_chain_ids",
    "align_to_focus",
    "contact_map",
]
