"""``bayes-attn potts fit ALIGNMENT`` and ``bayes-attn potts contacts``: protein families (docs/potts_proteins.md).

Fit: read the alignment (focus, filters), reweight at identity ``--theta``, then either one fit on all
sequences with the defaults of :func:`bayes_attn.potts.protein_settings`, or — when several
candidates are given (``--lam``, ``--heads``, fields on and off) — a validation scan on a split that
leaks no near-duplicate (:func:`bayes_attn.families.split_validation`) followed by a refit of the chosen
candidate on all sequences.  FIT.npz holds ``couplings``, ``fields``, (factored) ``A`` and ``V``,
``alphabet``, ``focus_id``, ``focus_sequence``, ``residues``, ``weights``, ``M_eff``; FIT.json the report.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from .._errors import InputError, renamed, require


def _iteration_line(t0):
    def show(it, value, gn):
        print(f"  iteration {it:4d}: objective {value:.6f}  gradient {gn:.2e}  ({time.time() - t0:.0f} s)", flush=True)

    return show


def _block_line(t0):
    def show(done, L, info):
        print(
            f"  sites fitted: {done} of {L} (this block: {info.reason} after {info.iterations} iterations, "
            f"gradient {info.grad_norm:.1e})  ({time.time() - t0:.0f} s)",
            flush=True,
        )

    return show


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def fit_budget(args, settings, L: int, C: int, M: int, *, sites_by_default: bool):
    """The fit's memory estimate against ``--max-memory`` (or the memory available): refuse with one line naming
    ``--max-memory`` when it cannot fit, else print the estimate and the arithmetic of one evaluation; plmDCA
    is fitted in blocks of sites when ``sites_by_default`` (protein families) or when the joint fit would not
    fit (docs/potts_proteins.md §4, "Memory and blocks of sites").  Returns (settings, report entry)."""
    from .. import potts as pt

    budget = pt.memory_budget(args.max_memory)
    kw = dict(dtype=settings.dtype, memory=settings.memory)
    how = ""
    if settings.model == "plmdca":
        k = pt.plm_site_block(L, C, M, budget=budget, **kw) if sites_by_default else L
        if k >= L and pt.plm_memory(L, C, M, **kw) > budget:
            k = pt.plm_site_block(L, C, M, budget=budget, **kw)
        if k == 0:
            need = pt.plm_memory(L, C, M, site_block=1, **kw)
            pt.require_fit_memory(need, budget, f"plmDCA at L = {L}, M = {M}, one site at a time,")
        settings = replace(settings, site_block=0 if k >= L else k)
        need = pt.plm_memory(L, C, M, site_block=settings.site_block, **kw)
        n_blocks = len(pt.site_blocks(L, settings.site_block)) if settings.site_block else 1
        how = (
            f", {n_blocks} blocks of about {settings.site_block} sites"
            if settings.site_block
            else ", all sites at once"
        )
    else:
        need = pt.fa_memory(L, C, M, max(settings.heads), dtype=settings.dtype)
        pt.require_fit_memory(
            need, budget, f"{settings.model} attention at L = {L}, M = {M}, {max(settings.heads)} heads,"
        )
    work = pt.fit_multiply_adds(L, C, M)
    secs = work / pt.matmul_rate()
    print(
        f"estimated peak memory {pt.format_bytes(need)} of a budget of {pt.format_bytes(budget)}{how}; one evaluation "
        f"{work:.1e} multiply-adds, about {secs:.1f} s here (at most {settings.max_iter} iterations: "
        f"~{secs * settings.max_iter / 60:.0f} min)",
        flush=True,
    )
    entry = {"memory_estimate_bytes": need, "memory_budget_bytes": budget, "evaluation_multiply_adds": work}
    return settings, entry


def run_fit_alignment(args) -> int:
    import jax

    from .. import families as fam
    from .. import potts as pt

    require(
        args.model in pt.FIT_MODELS, "model", f"{args.model} cannot fit an alignment (use plmdca, factored or softmax)"
    )
    require(args.C is None, "C", "is set by --alphabet for alignments")
    theta = fam.check_theta(fam.THETA if args.theta is None else args.theta, "theta")
    t0 = time.time()
    aln = fam.read_alignment(
        args.data,
        alphabet=args.alphabet,
        focus=args.focus,
        fmt=args.fmt,
        max_gap_column=args.max_gap_column,
        max_gap_sequence=args.max_gap_sequence,
    )
    require(aln.M >= 2, Path(args.data).name, f"needs >= 2 sequences, got {aln.M}")
    rep = aln.report
    print(
        f"{rep['file']}: {rep['format']}, {rep['sequences_read']} sequences x {rep['match_columns']} match "
        f"columns -> M = {aln.M}, L = {aln.L}"
        + (f" (focus {aln.focus_id})" if aln.focus_id else "")
        + (f"; {rep['unknown_letters_to_gap']} unknown letters read as gaps" if rep["unknown_letters_to_gap"] else "")
        + (f"; {rep['columns_dropped_gaps']} gappy columns dropped" if "columns_dropped_gaps" in rep else "")
        + (f"; {rep['sequences_dropped_gaps']} gappy sequences dropped" if "sequences_dropped_gaps" in rep else ""),
        flush=True,
    )
    tw = time.time()
    w = fam.sequence_weights(aln.sequences, theta)
    M_eff = float(w.sum())
    print(f"reweighting at identity {theta:g}: M_eff = {M_eff:.1f} of {aln.M} ({time.time() - tw:.1f} s)", flush=True)
    defaults = pt.protein_settings(
        args.model, aln.L, M_eff, heads=args.heads[0] if args.heads and len(args.heads) == 1 else None
    )
    if args.model == "plmdca":
        require(not args.heads or args.heads == [1], "heads", "plmDCA has no heads")
        require(args.fields != "off", "fields", "plmDCA always fits fields")
    settings = replace(
        defaults,
        lams=tuple(args.lam) if args.lam else defaults.lams,
        heads=tuple(args.heads) if (args.heads and args.model != "plmdca") else defaults.heads,
        fields={"on": (True,), "off": (False,), None: defaults.fields}[args.fields],
        lam_fields=defaults.lam_fields if args.lam_fields is None else args.lam_fields,
        max_iter=defaults.max_iter if args.max_iter is None else args.max_iter,
        dtype=args.dtype or defaults.dtype,
    )
    init = None
    if args.init_from:
        require(args.model == "factored", "init-from", "starts factored attention only")
        prev = _load_fit(args.init_from)
        require(
            prev["couplings"].shape == (aln.L, aln.L, aln.C, aln.C),
            "init-from",
            f"{Path(args.init_from).name} has couplings of shape {prev['couplings'].shape}, this alignment "
            f"needs {(aln.L, aln.L, aln.C, aln.C)}",
        )
        init = pt.fa_from_couplings(prev["couplings"], prev.get("fields"), settings.heads[0])
        settings = replace(settings, profile_fields=False)
    settings, budget_entry = fit_budget(args, settings, aln.L, aln.C, aln.M, sites_by_default=True)
    key = jax.random.PRNGKey(args.seed)
    report = {
        "model": args.model,
        "init_from": args.init_from,
        "alignment": rep,
        "L": aln.L,
        "C": aln.C,
        "M": aln.M,
        "theta": theta,
        "M_eff": M_eff,
        "settings": asdict(settings),
        "defaults": "protein_settings (docs/potts_proteins.md §4)",
        **budget_entry,
    }
    n_candidates = len(settings.lams) * (1 if args.model == "plmdca" else len(settings.heads) * len(settings.fields))
    if n_candidates > 1:
        tr, va = fam.split_validation(aln.sequences, theta, seed=args.seed)
        print(
            f"validation scan over {n_candidates} candidates: {len(tr)} training and {len(va)} validation "
            f"sequences ({aln.M - len(tr) - len(va)} near-duplicates of validation rows left out)",
            flush=True,
        )
        res = pt.fit_scan(
            key,
            aln.sequences[tr],
            aln.sequences[va],
            aln.C,
            settings,
            weights=w[tr],
            val_weights=w[va],
            progress=_scan_line,
            iteration=_iteration_line(t0),
            block=_block_line(t0),
        )
        b = res.best
        settings = replace(settings, lams=(b["lam"],), heads=(b["heads"],), fields=(b["fields"],))
        report["scan"] = {
            "entries": res.entries,
            "n_train": int(len(tr)),
            "n_val": int(len(va)),
            "choice": "smallest weighted validation PL; then refitted on all sequences",
        }
    print(f"fitting {args.model} on all {aln.M} sequences ({settings.dtype})", flush=True)
    tf = time.time()
    res = pt.fit_scan(
        key,
        aln.sequences,
        aln.sequences[:0],
        aln.C,
        settings,
        weights=w,
        init=init,
        iteration=_iteration_line(t0),
        block=_block_line(t0),
    )
    params, fit = res.params, res.best["fit"]
    print(
        f"{fit['reason']} after {fit['iterations']} iterations, gradient {fit['grad_norm']:.1e} "
        f"({time.time() - tf:.0f} s)",
        flush=True,
    )
    K, b = pt.couplings_and_fields(params)
    out = {
        "couplings": np.asarray(K, np.float32),
        "alphabet": np.str_(aln.alphabet),
        "focus_id": np.str_(aln.focus_id),
        "focus_sequence": np.str_(aln.focus_sequence),
        "residues": aln.residues,
        "weights": w,
        "M_eff": np.float64(M_eff),
    }
    if b is not None:
        out["fields"] = np.asarray(b, np.float32)
    if args.model != "plmdca":
        out["A"] = np.asarray(pt.fa_attention(params), np.float32)
        out["V"] = np.asarray(params.V, np.float32)
    report.update(
        chosen={k: res.best[k] for k in ("heads", "fields", "lam")},
        fit=fit,
        train_pl=pt.pl_value(params, aln.sequences, w),
        seconds=time.time() - t0,
        fit_seconds=time.time() - tf,
        peak_rss_mb=_peak_rss_mb(),
    )
    pt.atomic_savez(args.out, field="--out", **out)
    pt.atomic_write_json(Path(args.out).with_suffix(".json"), report, field="--out")
    print(
        json.dumps(
            {k: report[k] for k in ("model", "L", "M", "M_eff", "chosen", "train_pl", "seconds", "peak_rss_mb")},
            default=float,
        )
    )
    return 0


def _scan_line(e):
    print(
        f"heads={e['heads']} fields={'on' if e['fields'] else 'off'} lam={e['lam']:g}: weighted val PL "
        f"{e['val_nll']:.5f}  {e['fit']['reason']} in {e['fit']['iterations']} it.",
        flush=True,
    )


def _load_fit(path) -> dict:
    p = Path(path)
    require(p.is_file(), "fit", f"file not found: {p}")
    try:
        with np.load(p, allow_pickle=False) as d:
            arrays = {k: d[k] for k in d.files}
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input
        raise InputError(f"fit: cannot read {p.name} as .npz ({type(exc).__name__})") from None
    require("couplings" in arrays, "fit", f"{p.name} has no `couplings` array")
    K = arrays["couplings"]
    require(
        K.ndim == 4 and K.shape[0] == K.shape[1] and K.shape[2] == K.shape[3],
        "fit",
        f"`couplings` must have shape (L, L, C, C), got {K.shape}",
    )
    return arrays


def run_contacts(args) -> int:
    from .. import families as fam
    from .._io import atomic_write_bytes, atomic_write_json

    d = _load_fit(args.fit)
    K = d["couplings"]
    L, C = K.shape[0], K.shape[-1]
    alphabet = str(d["alphabet"]) if "alphabet" in d else ""
    gap = alphabet.index("-") if "-" in alphabet else None
    residues = d["residues"] if "residues" in d else np.arange(1, L + 1)
    require(len(residues) == L, "fit", f"`residues` has {len(residues)} entries for L = {L}")
    scores = fam.contact_scores(K, gap)
    ranked = fam.ranked_pairs(scores, residues)
    report = {
        "fit": Path(args.fit).name,
        "L": int(L),
        "C": int(C),
        "gap_state": gap,
        "score": "APC-corrected Frobenius norm of the symmetrised zero-sum couplings without the gap state",
    }
    dist = contacts = known = None
    title = f"{Path(args.fit).stem}: top L pairs"
    if args.structure:
        focus = str(d["focus_sequence"]) if "focus_sequence" in d else ""
        require(bool(focus), "fit", f"{Path(args.fit).name} has no focus sequence (fit the alignment with --focus ID)")
        chain = args.chain
        if chain is None:
            chain = fam.read_chain_ids(args.structure)[0]
        contacts, known, dist, srep = fam.contact_map(args.structure, chain, focus)
        report["structure"] = {"file": Path(args.structure).name, **srep}
        for name, sep in (("precision", fam.MIN_SEPARATION), ("precision_long_range", fam.LONG_RANGE)):
            report[name] = fam.precision_at(scores, contacts, known, residues, min_separation=sep)
        print(
            f"structure {Path(args.structure).name} chain {chain}: {srep['aligned']} of {L} focus residues "
            f"aligned, identity {srep['identity']:.0%}, {srep['unresolved']} unresolved, "
            f"{len(srep['mismatches'])} mismatches",
            flush=True,
        )
        for name, sep in (("precision", fam.MIN_SEPARATION), ("precision_long_range", fam.LONG_RANGE)):
            cuts = report[name]["cuts"]
            print(
                f"|i-j| >= {sep:2d}: "
                + "  ".join(f"top {c} ({v['k']}): {v['precision']:.3f}" for c, v in cuts.items())
                + f"  (random {report[name]['baseline']:.3f})",
                flush=True,
            )
        title += f" vs {Path(args.structure).name} {chain}"
    if args.plot:
        with renamed({"path": "--plot"}):
            fam.plot_contact_map(scores, contacts, known, residues, args.plot, title=title)
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(["rank", "i", "j", "separation", "score"] + (["distance", "contact"] if dist is not None else []))
    for k in range(ranked["rank"].size):
        row = [
            int(ranked["rank"][k]),
            int(ranked["res_i"][k]),
            int(ranked["res_j"][k]),
            int(ranked["separation"][k]),
            f"{ranked['score'][k]:.6g}",
        ]
        if dist is not None:
            dij = dist[ranked["i"][k], ranked["j"][k]]
            row += ["" if np.isnan(dij) else f"{dij:.2f}", "" if np.isnan(dij) else int(dij < fam.CONTACT_CUTOFF)]
        wr.writerow(row)
    atomic_write_bytes(args.out, buf.getvalue().encode(), field="--out")
    atomic_write_json(Path(args.out).with_suffix(".json"), report, field="--out")
    return 0
