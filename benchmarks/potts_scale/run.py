"""Cost of ``bayes-attn potts fit`` against the length of the family (docs/potts_proteins.md §4, "Memory and
blocks of sites"): real families made longer by tiling, side by side with Debian's ``freecontact`` (mfDCA).

A family of L columns tiled t times has t L columns: row m is sequence m followed by sequences pi_1(m), ...,
pi_{t-1}(m) of the same family (seeded permutations), so every column's statistics are real and the new
column pairs are independent.  Each fit is the CLI with its defaults (``--max-iter N`` bounds the iterations;
the record says so), timed as a whole command with its peak resident memory read from the kernel
(``wait4``), beside the fit's own memory estimate.  ``freecontact`` (``apt-get install freecontact``; a C++
mfDCA/PSICOV tool) runs on the same columns where it is installed.  Results merge into ``results.json``.
One job at a time: run nothing else on the machine meanwhile.

    python benchmarks/potts_scale/run.py [--family dhfr] [--tiles 1 3 6] [--models plmdca factored] [--max-iter N]
    python scripts/gen_docs.py      # table potts_scale in docs/potts_proteins.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "potts_proteins"))

import numpy as np  # noqa: E402

from bayes_attn._io import atomic_write_json  # noqa: E402
from run import cli, timed  # noqa: E402  (benchmarks/potts_proteins/run.py)

FAMILIES = ROOT / "benchmarks" / "potts_proteins" / "data"


def tiled_alignment(family: dict, tiles: int, seed: int = 0):
    """(sequences (M, tiles * L) of the family's focus columns, alphabet)."""
    from bayes_attn import families

    aln = families.read_alignment(FAMILIES / family["alignment"], focus=family["focus"])
    rng = np.random.default_rng(seed)
    s = aln.sequences
    blocks = [s] + [s[rng.permutation(len(s))] for _ in range(tiles - 1)]
    return np.concatenate(blocks, axis=1), aln.alphabet


def write_fasta(path: Path, s, alphabet: str) -> None:
    path.write_text("".join(f">s{m}\n{''.join(alphabet[c] for c in row)}\n" for m, row in enumerate(s)))


def run_fit(fasta: Path, model: str, out: Path, max_iter) -> dict:
    fit = out / f"{fasta.stem}_{model}.npz"
    cmd = cli() + ["potts", "fit", str(fasta), "--model", model, "--out", str(fit)]
    if max_iter is not None:
        cmd += ["--max-iter", str(max_iter)]
    cost = timed(cmd, out / f"{fasta.stem}_{model}.log")
    rep = json.loads(fit.with_suffix(".json").read_text())
    return {
        **cost,
        "L": rep["L"],
        "M": rep["M"],
        "max_iter": rep["settings"]["max_iter"],
        "bounded": max_iter is not None,
        "site_block": rep["settings"].get("site_block", 0),
        "memory_estimate_mb": rep["memory_estimate_bytes"] / 1e6,
        "fit": rep["fit"],
        "fit_seconds": rep["fit_seconds"],
    }


def run_freecontact(s, alphabet: str, out: Path, name: str) -> dict | None:
    exe = shutil.which("freecontact")
    if exe is None:
        return None
    aln = out / f"{name}.aln"
    aln.write_text("".join("".join(alphabet[c] for c in row) + "\n" for row in s))
    t0 = time.time()
    with open(aln) as fin, open(out / f"{name}_freecontact.txt", "w") as fout:
        proc = subprocess.Popen([exe, "--threads", "2"], stdin=fin, stdout=fout, stderr=subprocess.DEVNULL)
        _, status, ru = __import__("os").wait4(proc.pid, 0)
    ok = status == 0
    return {"seconds": time.time() - t0, "peak_rss_mb": ru.ru_maxrss / 1024.0, "ok": ok, "L": s.shape[1], "M": len(s)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="dhfr", help="a name from benchmarks/potts_proteins/data/families.json")
    ap.add_argument("--tiles", type=int, nargs="+", default=[1, 3, 6])
    ap.add_argument(
        "--models", nargs="+", default=["plmdca", "factored"], choices=["plmdca", "factored", "freecontact"]
    )
    ap.add_argument("--max-iter", type=int, help="bound the L-BFGS iterations (default: the fit's own defaults)")
    ap.add_argument("--work", default=str(ROOT / "out" / "potts_scale"))
    ap.add_argument("--results", default=str(HERE / "results.json"))
    args = ap.parse_args(argv)
    fams = json.loads((FAMILIES / "families.json").read_text())["families"]
    fam = next(f for f in fams if f["name"] == args.family)
    out = Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    path = Path(args.results)
    res = json.loads(path.read_text()) if path.is_file() else {"rows": {}}
    for t in args.tiles:
        s, alphabet = tiled_alignment(fam, t)
        name = f"{fam['name']}_x{t}"
        fasta = out / f"{name}.fasta"
        write_fasta(fasta, s, alphabet)
        for model in args.models:
            if model == "freecontact":
                row = run_freecontact(s, alphabet, out, name)
                if row is None:
                    print("freecontact is not installed: skipped", flush=True)
                    continue
            else:
                row = run_fit(fasta, model, out, args.max_iter)
            row.update(family=fam["name"], tiles=t, model=model)
            key = f"{name}/{model}" + ("" if args.max_iter is None or model == "freecontact" else f"/it{args.max_iter}")
            res["rows"][key] = row
            res["machine"] = {"cores": __import__("os").cpu_count()}
            atomic_write_json(path, res)
            print(f"{key}: L = {row['L']}, {row['seconds']:.0f} s, {row['peak_rss_mb']:.0f} MB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
