"""Contact prediction on real protein families: plmDCA and factored attention through the CLI, side by side
with pydca's plmDCA on the same alignment (docs/potts_proteins.md §5).

Every family of ``data/families.json`` (alignment, focus ID, structure, chain; provenance and licence in
``data/PROVENANCE.md``) is fitted by ``bayes-attn potts fit ALIGNMENT --focus ID --model M`` with the default
hyper-parameters, and scored by ``bayes-attn potts contacts FIT --structure S --chain C``; each whole command
is timed (wall seconds) and its peak resident memory read from the kernel (``wait4``).  With ``--pydca
PYTHON`` (a Python with pydca 1.23 installed, see ``pydca_runner.py``), pydca's PlmDCA (seqid 0.8,
lambda_h = 1, lambda_J = 0.2 (L - 1), 500 iterations) runs on the same focus columns, and its ranked pairs are
scored against the same contact map.  Results go to ``results.json`` (merged: finished entries are kept,
``--redo`` refits).  One job at a time: run nothing else on the machine meanwhile.

    python benchmarks/potts_proteins/run.py [--pydca /path/to/pydca-venv/bin/python] [--families A B]
    python scripts/gen_docs.py      # table potts_proteins in docs/potts_results.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bayes_attn._io import atomic_write_json  # noqa: E402

MODELS = ("plmdca", "factored", "factored_from_plmdca")


def timed(cmd, log) -> dict:
    """Run ``cmd``; wall seconds and peak RSS (MB) of the process tree's largest member."""
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        _, status, ru = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"error: {' '.join(map(str, cmd))} exited {code}; see {log}")
    return {"seconds": time.time() - t0, "peak_rss_mb": ru.ru_maxrss / 1024.0}


def cli():
    exe = shutil.which("bayes-attn") or str(Path(sys.executable).with_name("bayes-attn"))
    return [exe]


def run_ours(fam, model, out: Path) -> dict:
    """``factored_from_plmdca``: factored attention started from the plmDCA fit of the same family
    (``--init-from``); its seconds are those of its own command (the table adds plmDCA's)."""
    fit = out / f"{fam['name']}_{model}.npz"
    extra = []
    if model == "factored_from_plmdca":
        extra = ["--init-from", str(out / f"{fam['name']}_plmdca.npz")]
    cmd = cli() + [
        "potts",
        "fit",
        str(HERE / "data" / fam["alignment"]),
        "--focus",
        fam["focus"],
        "--model",
        model.split("_")[0],
        "--out",
        str(fit),
        *extra,
    ]
    cost = timed(cmd, out / f"{fam['name']}_{model}.log")
    scores = out / f"{fam['name']}_{model}_scores.csv"
    timed(
        cli()
        + [
            "potts",
            "contacts",
            str(fit),
            "--out",
            str(scores),
            "--structure",
            str(HERE / "data" / fam["structure"]),
            "--chain",
            fam["chain"],
            "--plot",
            str(out / f"{fam['name']}_{model}.png"),
        ],
        out / f"{fam['name']}_{model}_contacts.log",
    )
    rep = json.loads(fit.with_suffix(".json").read_text())
    con = json.loads(scores.with_suffix(".json").read_text())
    return {
        **cost,
        "M": rep["M"],
        "L": rep["L"],
        "M_eff": rep["M_eff"],
        "fit": rep["fit"],
        "chosen": rep["chosen"],
        "precision": con["precision"],
        "precision_long_range": con["precision_long_range"],
        "structure": {k: con["structure"][k] for k in ("aligned", "identity", "unresolved", "mismatches")},
    }


def run_pydca(fam, python, out: Path) -> dict:
    """pydca on the focus columns of our reader (the same sequences), scored with our contact map."""
    from bayes_attn import families

    aln = families.read_alignment(HERE / "data" / fam["alignment"], focus=fam["focus"])
    fasta = out / f"{fam['name']}_focus.fasta"
    fasta.write_text(
        "".join(f">s{m}\n{''.join(aln.alphabet[c] for c in row)}\n" for m, row in enumerate(aln.sequences))
    )
    scores = out / f"{fam['name']}_pydca.csv"
    cost = timed(
        [python, str(HERE / "pydca_runner.py"), str(fasta), "--out", str(scores)], out / f"{fam['name']}_pydca.log"
    )
    L = aln.L
    S = np.full((L, L), -np.inf)
    for line in scores.read_text().splitlines()[1:]:
        i, j, s = line.split(",")
        S[int(i) - 1, int(j) - 1] = S[int(j) - 1, int(i) - 1] = float(s)
    contacts, known, _, _ = families.contact_map(HERE / "data" / fam["structure"], fam["chain"], aln.focus_sequence)
    meta = json.loads(scores.with_suffix(".json").read_text())
    return {
        **cost,
        "M": aln.M,
        "L": L,
        "pydca": meta,
        "precision": families.precision_at(S, contacts, known, aln.residues, min_separation=families.MIN_SEPARATION),
        "precision_long_range": families.precision_at(
            S, contacts, known, aln.residues, min_separation=families.LONG_RANGE
        ),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", help="names from data/families.json (default: all)")
    ap.add_argument(
        "--methods",
        nargs="+",
        default=["plmdca", "pydca", "factored", "factored_from_plmdca"],
        choices=[*MODELS, "pydca"],
    )
    ap.add_argument("--pydca", help="Python interpreter with pydca 1.23 (skips pydca without it)")
    ap.add_argument("--work", default=str(ROOT / "out" / "potts_proteins"), help="fits, scores and logs")
    ap.add_argument("--figures", default=str(ROOT / "docs" / "figures"), help="where the contact maps are copied")
    ap.add_argument("--results", default=str(HERE / "results.json"))
    ap.add_argument("--redo", action="store_true")
    args = ap.parse_args(argv)
    families = json.loads((HERE / "data" / "families.json").read_text())["families"]
    if args.families:
        families = [f for f in families if f["name"] in args.families]
    out = Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    Path(args.figures).mkdir(parents=True, exist_ok=True)
    path = Path(args.results)
    res = json.loads(path.read_text()) if path.is_file() else {"families": {}}
    res["machine"] = {"cores": os.cpu_count()}
    for fam in families:
        entry = res["families"].setdefault(fam["name"], {"meta": fam})
        for method in args.methods:
            if method in entry and not args.redo:
                continue
            if method == "pydca":
                if not args.pydca:
                    print(f"{fam['name']}: pydca skipped (no --pydca)")
                    continue
                entry[method] = run_pydca(fam, args.pydca, out)
            else:
                entry[method] = run_ours(fam, method, out)
                png = out / f"{fam['name']}_{method}.png"
                if fam.get("figure"):
                    shutil.copyfile(png, Path(args.figures) / f"potts_contacts_{fam['name']}_{method}.png")
            e = entry[method]
            print(
                f"{fam['name']} {method}: "
                + " ".join(f"{k} {v['precision']:.3f}" for k, v in e["precision"]["cuts"].items())
                + f"  {e['seconds']:.0f} s, {e['peak_rss_mb']:.0f} MB",
                flush=True,
            )
            atomic_write_json(path, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
