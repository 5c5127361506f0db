#!/usr/bin/env python3
"""Run pydca 1.23 plmDCA (C++ backend) on a FASTA alignment and write
APC-corrected Frobenius-norm contact scores.

Usage (with the Python of a virtual environment made by setup_pydca.sh):
    pydca_runner.py ALN.fasta --out scores.csv [--seqid 0.8] [--lambda-h 1.0]
        [--lambda-J 0.2*(L-1)] [--max-iterations 500] [--num-threads 1]
        [--no-meff] [--keep-tmp]

Outputs:
  scores.csv  : i,j,score  (1-based column indices of the input alignment,
                i<j, all L*(L-1)/2 pairs, sorted by descending score)
  scores.json : timings, peak RSS, M, L, M_eff, settings, preprocessing notes.

What pydca 1.23 does to the input (read from its source, pydca/plmdca/*.cpp):
  * The C++ backend reads the file itself, line by line: every non-empty line
    not starting with '>' is ONE sequence and only its first L characters are
    used (L = length of the first record as parsed by Biopython on the Python
    side).  Wrapped (multi-line) FASTA would therefore be mis-read, so this
    runner always hands pydca a normalised copy (one upper-case line per record).
  * Exact duplicate sequences are removed (only unique sequences are kept).
  * No column or sequence gap filtering; all L columns are kept, so pydca's
    0-based site k is input column k+1.
  * Letters are upper-cased; B,J,O,U,X,Z,'.','~' map to the gap state.
  * Sequence weights: w_n = 1 / #{m : identity(n,m) > seqid} (strict '>',
    identity = fraction of identical positions over all L, gaps count),
    computed on the de-duplicated set.
  * Objective: sum_n w_n * (-log P(x_ni | x_n\\i)) summed over all sites
    (symmetric plm, one J_ij shared by both conditionals), NOT divided by
    M_eff, + lambda_h*||h||^2 + lambda_J*||J||^2 ; L-BFGS (libLBFGS, float32,
    m=5, epsilon=1e-3, ftol=1e-4, max_linesearch=5).
  * Score: for each pair, take the 20x20 block (gap state dropped), double
    centre it (zero-sum gauge), Frobenius norm, then APC:
    FN_apc(i,j) = FN(i,j) - FN_i * FN_j / FN_mean.
"""

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time

T0 = time.perf_counter()

# libLBFGS return codes (pydca/plmdca/lbfgs/include/lbfgs.h)
LBFGS_CODES = {
    0: "LBFGS_SUCCESS/CONVERGENCE",
    1: "LBFGS_STOP",
    2: "LBFGS_ALREADY_MINIMIZED",
    -1001: "LBFGSERR_ROUNDING_ERROR",
    -1000: "LBFGSERR_MINIMUMSTEP",
    -999: "LBFGSERR_MAXIMUMSTEP",
    -998: "LBFGSERR_MAXIMUMLINESEARCH",
    -997: "LBFGSERR_MAXIMUMITERATION",
    -996: "LBFGSERR_WIDTHTOOSMALL",
    -995: "LBFGSERR_INVALIDPARAMETERS",
    -994: "LBFGSERR_INCREASEGRADIENT",
}


def peak_rss_mb():
    # ru_maxrss is in kB on Linux
    s = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    c = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self_mb": s / 1024.0, "children_mb": c / 1024.0, "self_plus_children_mb": (s + c) / 1024.0}


def read_fasta(path):
    names, seqs = [], []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                names.append(line[1:])
                seqs.append([])
            else:
                if not seqs:
                    raise SystemExit("FASTA parse error: sequence before header")
                seqs[-1].append(line)
    return names, ["".join(s).upper() for s in seqs]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fasta")
    ap.add_argument("--out", required=True, help="output CSV (i,j,score)")
    ap.add_argument("--seqid", type=float, default=0.8)
    ap.add_argument("--lambda-h", type=float, default=1.0)
    ap.add_argument("--lambda-J", type=float, default=None, help="default 0.2*(L-1)")
    ap.add_argument("--max-iterations", type=int, default=500)
    ap.add_argument("--num-threads", type=int, default=1)
    ap.add_argument("--no-meff", action="store_true", help="skip the separate M_eff computation (O(M^2 L))")
    ap.add_argument("--keep-tmp", action="store_true")
    args = ap.parse_args()

    # Keep numba (used only for the optional M_eff computation) on the same
    # thread budget; must be set before numba is imported.
    os.environ.setdefault("NUMBA_NUM_THREADS", str(max(1, args.num_threads)))

    import numpy as np
    import pydca
    from pydca.plmdca import plmdca as plmdca_mod

    # ---------------- input validation / normalisation ----------------
    names, seqs = read_fasta(args.fasta)
    if not seqs:
        raise SystemExit("no sequences in %s" % args.fasta)
    L = len(seqs[0])
    bad_len = [k for k, s in enumerate(seqs) if len(s) != L]
    if bad_len:
        raise SystemExit("sequences of unequal length (first bad record #%d)" % (bad_len[0] + 1))
    allowed = set("ACDEFGHIKLMNPQRSTVWY-.~BJOUXZ")
    bad_chars = sorted(set("".join(seqs)) - allowed)
    if bad_chars:
        raise SystemExit("characters pydca's C++ reader cannot map: %r" % bad_chars)
    M = len(seqs)
    n_unique = len(set(seqs))
    n_nonstd = sum(sum(ch in "BJOUXZ.~" for ch in s) for s in seqs)

    tmpdir = tempfile.mkdtemp(prefix="pydca_run_")
    norm_fasta = os.path.join(tmpdir, "aln.fasta")
    with open(norm_fasta, "w") as fh:
        for k, s in enumerate(seqs):
            fh.write(">s%d\n%s\n" % (k, s))

    lambda_h = args.lambda_h
    lambda_J = args.lambda_J if args.lambda_J is not None else 0.2 * (L - 1)

    rss_before_run = peak_rss_mb()  # after imports (numpy/numba/Bio): baseline
    # ---------------- run pydca ----------------
    t_start = time.perf_counter()
    inst = plmdca_mod.PlmDCA(
        norm_fasta,
        "protein",
        seqid=args.seqid,
        lambda_h=lambda_h,
        lambda_J=lambda_J,
        max_iterations=args.max_iterations,
        num_threads=args.num_threads,
        verbose=True,
    )
    assert inst.sequences_len == L, (inst.sequences_len, L)

    # Time the C++ fit separately and capture its stderr (L-BFGS progress) by
    # wrapping the instance's backend call (compute_sorted_FN calls it).
    timing = {}
    backend_log = os.path.join(tmpdir, "backend_stderr.txt")
    orig_backend = inst.get_fields_and_couplings_from_backend

    def timed_backend():
        sys.stderr.flush()
        saved = os.dup(2)
        fd = os.open(backend_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        try:
            t = time.perf_counter()
            res = orig_backend()
            timing["backend_fit_and_copy_s"] = time.perf_counter() - t
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(fd)
            os.close(saved)
        return res

    inst.get_fields_and_couplings_from_backend = timed_backend

    scores = inst.compute_sorted_FN_APC()  # [((i, j), score), ...] 0-based, desc
    wall = time.perf_counter() - t_start
    rss_after_run = peak_rss_mb()

    # parse the L-BFGS log
    with open(backend_log, errors="replace") as fh:
        log = fh.read()
    iters = [int(x) for x in re.findall(r"^Iteration (\d+):", log, re.M)]
    # pydca prints "completed" only when ret == -1001 (which in libLBFGS is
    # LBFGSERR_ROUNDING_ERROR); any other return code is printed numerically.
    status = None
    m = re.search(r"terminated with status code = (-?\d+)", log)
    if "L-BFGS optimization completed" in log:
        status = -1001
    elif m:
        status = int(m.group(1))
    status_name = LBFGS_CODES.get(status, None if status is None else "other")
    fx = re.findall(r"^fx = ([-+0-9.eEnaif]+)", log, re.M)

    # ---------------- write outputs ----------------
    out_csv = args.out
    with open(out_csv, "w") as fh:
        fh.write("i,j,score\n")
        for (i, j), s in scores:
            fh.write("%d,%d,%.8g\n" % (i + 1, j + 1, float(s)))

    # ---------------- optional M_eff (same definition as the C++ backend) ---
    meff = None
    meff_s = None
    if not args.no_meff:
        t = time.perf_counter()
        w = inst.compute_seqs_weight()  # pydca's numba version, dedup'd input
        meff = float(np.sum(w))
        meff_s = time.perf_counter() - t

    json_path = os.path.splitext(out_csv)[0] + ".json"
    info = {
        "tool": "pydca",
        "pydca_version": "1.23",
        "pydca_path": os.path.dirname(pydca.__file__),
        "input": os.path.abspath(args.fasta),
        "M": M,
        "M_unique_used_by_pydca": n_unique,
        "L": L,
        "M_eff": meff,
        "M_eff_note": "recomputed after the run with pydca PlmDCA.compute_seqs_weight "
        "(pydca does not expose the backend's M_eff; same formula: "
        "dedup, weight=1/#{identity > seqid}); not included in wall_seconds",
        "M_eff_seconds": meff_s,
        "wall_seconds": wall,
        "wall_seconds_note": "PlmDCA() construction + compute_sorted_FN_APC() "
        "(file parse, C++ L-BFGS fit, ctypes copy, Python FN/APC loops); "
        "excludes imports and CSV writing",
        "backend_fit_and_copy_seconds": timing.get("backend_fit_and_copy_s"),
        "total_process_seconds": time.perf_counter() - T0,
        "peak_rss": rss_after_run,
        "peak_rss_mb": rss_after_run["self_plus_children_mb"],
        "peak_rss_mb_before_run": rss_before_run["self_plus_children_mb"],
        "peak_rss_note": "ru_maxrss high-water marks (self+children), taken right after "
        "compute_sorted_FN_APC, before the optional M_eff step; "
        "_before_run is the baseline after imports",
        "lbfgs": {
            "iterations_reported": max(iters) if iters else None,
            "return_code": status,
            "return_name": status_name,
            "final_fx": float(fx[-1]) if fx else None,
        },
        "settings": {
            "biomolecule": "protein",
            "num_site_states": 21,
            "seqid": args.seqid,
            "lambda_h": lambda_h,
            "lambda_J": lambda_J,
            "lambda_J_default_rule": "0.2*(L-1)" if args.lambda_J is None else "user",
            "max_iterations": args.max_iterations,
            "num_threads": args.num_threads,
            "score": "compute_sorted_FN_APC (FN of gap-free 20x20 block, double-centred, then APC)",
        },
        "index_convention": "CSV i,j are 1-based column indices of the input alignment "
        "(pydca site k, 0-based, -> k+1); every column is kept, i<j, all pairs",
        "preprocessing": {
            "columns_dropped": [],
            "column_map": "identity (output index = input column, 1-based)",
            "sequences_dropped": "exact duplicates removed by pydca backend (%d of %d)" % (M - n_unique, M),
            "gap_filtering": "none",
            "nonstandard_chars_mapped_to_gap": n_nonstd,
            "runner_normalisation": "input rewritten to a temp FASTA, one upper-case "
            "line per record (pydca C++ reader needs unwrapped lines)",
        },
        "n_pairs": len(scores),
    }
    with open(json_path, "w") as fh:
        json.dump(info, fh, indent=2)

    if args.keep_tmp:
        info["tmpdir"] = tmpdir
    else:
        for f in os.listdir(tmpdir):
            os.remove(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)
    print(
        "wrote %s and %s (M=%d, L=%d, wall %.2fs, peak RSS %.1f MB)"
        % (out_csv, json_path, M, L, wall, info["peak_rss_mb"])
    )


if __name__ == "__main__":
    main()
