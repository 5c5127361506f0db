"""``bayes-attn potts sample|fit|replica``: Potts data, factored-attention fits, replica curves (docs/potts.md).

File contract:

* ``potts sample CONFIG.toml --out DATA.npz`` writes ``sequences`` (M, L) int in [0, C) (train),
  ``val_sequences``, ``test_sequences``, the truth ``J`` (L, L), ``U`` (C, C), ``beta``, ``h``
  (L, C) and ``consensus`` (L,) when the model has fields, and ``info`` (JSON: configuration,
  tuning and equilibration report).
* ``potts fit DATA.npz --model factored|softmax|plmdca|transformer --out FIT.npz`` reads
  ``sequences`` (and ``val_sequences`` / ``test_sequences`` when present) and never needs the
  truth; writes ``couplings`` (L, L, C, C) and ``fields`` (L, C) (raw parameters; ``fields`` only
  for models that have them), ``A`` (H, L, L) and ``V`` (H, C, C) (attention), and ``FIT.json``:
  the validation scan over ``--lam`` x ``--heads`` x fields (the chosen entry has the smallest
  validation PL; the default lambda grid ``LAM_GRID`` is walked from the largest value down and
  stopped once the validation PL rises, plmDCA fits ``PLM_LAM``: ``bayes_attn.potts.data_settings``; fields carry
  the L2 weight ``--lam-fields``), the fit report (stopping reason, gradient norm) and, when the truth is in
  DATA.npz, the test metrics of ``fa_metrics`` in the zero-sum gauge (stated in the file).
* ``potts fit ALIGNMENT --focus ID ...`` reads an alignment instead (docs/potts_proteins.md): the same
  arrays plus ``alphabet`` (colour i = character i), ``focus_id``, ``focus_sequence``, ``residues``
  (focus residue number of each column), the sequence ``weights`` and ``M_eff``.
* ``potts contacts FIT.npz --out SCORES.csv [--structure S.pdb --chain A] [--plot FIG.png]`` ranks every
  pair by the APC-corrected Frobenius norm and, with a structure, reports precision (SCORES.json).
* ``potts replica --out CURVES.npz [--plot FIG.png]`` writes theory curves and simulations.

``[potts]`` table of CONFIG.toml (all optional; ``bayes_attn.potts.SampleConfig``)::

    generator = "G2"; L = 20; C = 20; seed = 0; data_seed = 0
    field_sigma = 0.0; consensus = 0.0      # h_i(a) = consensus [a = c_i] + field_sigma N(0, 1)
    beta = "tune"          # or a number
    target_D = 0.3; tol_D = 0.01
    M = 3000; n_val = 1000; n_test = 2000
    rungs = 16; beta_min = 0.8; beta_max = 4.0; systems = 200; burn_sweeps = 1000; thin = 10
    tune_systems = 100; tune_sweeps = 600; check_other = true
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .._errors import InputError, positive, require
from .._io import read_toml

MODELS = ("factored", "softmax", "plmdca", "transformer")


def register(sub) -> None:
    p = sub.add_parser("potts", help="generalized Potts model and factored attention (docs/potts.md)")
    ps = p.add_subparsers(dest="potts_command", required=True, parser_class=type(p))
    s = ps.add_parser("sample", help="sample Potts sequences (PT, beta tuned to a Hamming distance)")
    s.add_argument("config", help="TOML file with a [potts] table")
    s.add_argument("--out", required=True, help="output DATA.npz")
    s.set_defaults(func=run_sample)
    f = ps.add_parser("fit", help="fit factored attention / plmDCA / a transformer to sequences or an alignment")
    f.add_argument("data", help="DATA.npz with `sequences`, or an alignment (FASTA, A2M/A3M, Stockholm; .gz too)")
    f.add_argument("--focus", help="alignment: ID of the focus sequence (keep the columns where it has a residue)")
    f.add_argument("--alphabet", default="protein", help="alignment: protein (20 + gap) or rna (ACGU + gap)")
    f.add_argument("--format", dest="fmt", help="alignment: fasta, a2m, a3m or stockholm (default: from the name)")
    f.add_argument("--max-gap-column", type=float, help="alignment: drop columns with a larger gap fraction")
    f.add_argument("--max-gap-sequence", type=float, help="alignment: drop sequences with a larger gap fraction")
    f.add_argument(
        "--theta",
        type=float,
        help="sequence reweighting at this identity (default 0.8 for alignments, none for DATA.npz)",
    )
    f.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        help="precision (default float32 for alignments, float64 for DATA.npz)",
    )
    f.add_argument(
        "--init-from",
        dest="init_from",
        help="alignment, factored: start from the best sum of --heads "
        "Kronecker products of the couplings of this FIT.npz (e.g. a plmDCA fit)",
    )
    f.add_argument("--model", default="factored", choices=MODELS)
    f.add_argument("--out", required=True, help="output FIT.npz (report in FIT.json)")
    f.add_argument(
        "--lam",
        type=float,
        nargs="+",
        action="extend",
        help="L2 weights (several: every one fitted, chosen on validation PL; default: the grid "
        "1e-3 3e-4 ... 1e-6, its lambda path stopped once the validation PL rises; plmDCA 5e-4)",
    )
    f.add_argument(
        "--heads",
        type=int,
        nargs="+",
        action="extend",
        help="attention heads (several: chosen on validation PL; default 1)",
    )
    g = f.add_mutually_exclusive_group()
    g.add_argument(
        "--fields",
        dest="fields",
        action="store_const",
        const="on",
        help="per-site fields b_i(a) on (default for factored/softmax: fit with and without, "
        "keep the better validation PL)",
    )
    g.add_argument("--no-fields", dest="fields", action="store_const", const="off", help="no per-site fields")
    f.add_argument(
        "--lam-fields",
        type=float,
        dest="lam_fields",
        help="L2 weight on the fields of factored/softmax fits (default 1e-5; docs/potts_choices.md)",
    )
    f.add_argument("--C", type=int, dest="C", help="number of colours (default: from the data)")
    f.add_argument("--layers", type=int, default=2, help="transformer layers")
    f.add_argument("--d-model", type=int, default=32)
    f.add_argument("--steps", type=int, default=3000, help="transformer steps")
    f.add_argument(
        "--max-iter",
        type=int,
        help="L-BFGS iterations (default 3000 for DATA.npz; for alignments the "
        "protein defaults, docs/potts_proteins.md)",
    )
    f.add_argument(
        "--max-memory",
        type=float,
        dest="max_memory",
        help="GB the fit may take (default: the memory available); a fit estimated above it is refused, "
        "plmDCA on an alignment is fitted in blocks of sites that fit it",
    )
    f.add_argument("--seed", type=int, default=0)
    f.set_defaults(func=run_fit, fields=None, cpus_default="all")  # large matrix products
    c = ps.add_parser(
        "contacts", help="contact scores of a fit (APC-corrected Frobenius norms), precision against a structure"
    )
    c.add_argument("fit", help="FIT.npz of `potts fit`")
    c.add_argument("--out", required=True, help="scores CSV (every pair ranked; report in the .json beside it)")
    c.add_argument("--structure", help="PDB or mmCIF file of the focus protein")
    c.add_argument("--chain", help="chain of the structure (default: the first)")
    c.add_argument("--plot", help="contact-map figure (PNG), predicted vs true")
    c.set_defaults(func=run_contacts)
    r = ps.add_parser("replica", help="ridge/replica theory curves and simulations (potts.md §9.2)")
    r.add_argument("--out", required=True, help="output CURVES.npz")
    r.add_argument("--plot", help="PNG figure")
    r.add_argument("--L", type=int, default=200)
    r.add_argument("--nu", type=float, default=3.0)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--lam", type=float, action="append", help="ridge lambdas (default 1e-4 1e-2 1e-1 + optimal)")
    r.add_argument("--alphas", type=float, nargs="+", default=[0.25, 0.5, 0.75, 0.95, 1.05, 1.5, 2.0, 3.0, 4.0])
    r.add_argument("--sites", type=int, default=10)
    r.add_argument("--reps", type=int, default=4)
    r.set_defaults(func=run_replica)


# ---------------------------------------------------------------------------- sample
def _sample_config(path):
    from ..potts import SampleConfig

    raw, _ = read_toml(path)
    return SampleConfig.from_table(raw.get("potts", {}))


def run_sample(args) -> int:
    from .. import potts as pt

    cfg = _sample_config(args.config)
    d = pt.make_dataset(cfg, progress=lambda b, D: print(f"tune: beta={b:.4f} D={D:.4f}", flush=True))
    info = json.loads(d["info"])
    tun, rep = info.get("tuning"), info["equilibration"]
    if tun and not tun["reached"]:
        print(f"warning: bisection stopped at D={tun['D']:.4f}, outside target {cfg.target_D} +- {cfg.tol_D}")
    print(
        f"beta={float(d['beta']):.4f} D={rep['D']:.4f} energy/site={rep['energy_per_site']:.4f} "
        f"equilibration {'PASS' if rep['passed'] else 'FAIL: ' + '; '.join(rep['failures'])}"
    )
    pt.atomic_savez(args.out, field="--out", **d)
    return 0


# ---------------------------------------------------------------------------- fit
def _load_data(path):
    path = Path(path)
    require(path.is_file(), "data", f"file not found: {path}")
    try:
        d = np.load(path, allow_pickle=False)
        arrays = {k: d[k] for k in d.files}
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input
        raise InputError(f"data: cannot read {path} as .npz ({type(exc).__name__})") from None
    require("sequences" in arrays, "data", f"{path.name} has no `sequences` array")
    return arrays


def _splits(d, C_opt):
    """Validated (train, val, test, C): C from --C, else from U in DATA, else from the data."""
    from ..potts import check_sequences

    s = check_sequences(d["sequences"], min_rows=2)
    L = s.shape[1]
    others = {k: check_sequences(d[k], None, L, k) for k in ("val_sequences", "test_sequences") if k in d}
    hi = max(int(x.max()) for x in (s, *others.values())) + 1
    if C_opt is not None:
        positive(C_opt, "C", integer=True)
        C = C_opt
    elif "U" in d:
        C = int(np.shape(d["U"])[0])
    else:
        C = hi
    if "U" in d:
        require(
            np.ndim(d["U"]) == 2 and np.shape(d["U"])[0] == C, "C", f"is {C} but DATA's U has shape {np.shape(d['U'])}"
        )
    s = check_sequences(s, C, L, "sequences", min_rows=2)
    val = check_sequences(others["val_sequences"], C, L, "val_sequences") if "val_sequences" in others else None
    test = check_sequences(others["test_sequences"], C, L, "test_sequences") if "test_sequences" in others else None
    if val is None:
        n = max(len(s) // 10, 1)
        s, val = s[:-n], s[-n:]
    return s, val, test, C


def _truth(d):
    from ..potts import Potts

    if not all(k in d for k in ("J", "U", "beta")):
        return None
    return Potts(d["J"], d["U"], float(d["beta"]), d.get("h"))


def _check_options(args):
    """The flags' combinations; the values the library takes are checked by it (``--lam``: FitSettings)."""
    heads = args.heads or [1]
    for h in heads:
        positive(h, "heads", integer=True)
    if args.lam_fields is not None:
        require(
            args.model in ("factored", "softmax"),
            "lam-fields",
            "only factored and softmax fits have a field weight of their own",
        )
        require(
            bool(np.isfinite(args.lam_fields)) and args.lam_fields >= 0,
            "lam-fields",
            f"must be >= 0, got {args.lam_fields}",
        )
        require(args.fields != "off", "lam-fields", "given with --no-fields")
    if args.model == "transformer":
        require(
            args.fields is None, "fields", "the transformer has no per-site fields (use factored, softmax or plmdca)"
        )
        require(len(heads) == 1, "heads", "the transformer takes one value")
        require(args.lam is None, "lam", "the transformer has no L2 weight of its own (it trains with weight decay)")
    if args.model == "plmdca":
        require(args.fields != "off", "fields", "plmDCA always fits fields")
        require(len(heads) == 1 and heads[0] == 1, "heads", "plmDCA has no heads")
    for name in ("layers", "d_model", "steps"):
        positive(getattr(args, name), name.replace("_", "-"), integer=True)
    args.max_iter = 3000 if args.max_iter is None else args.max_iter
    require(args.max_iter >= 1, "max-iter", f"must be >= 1, got {args.max_iter}")
    fields = {"on": (True,), "off": (False,), None: (False, True)}[args.fields]
    return heads, fields


def _is_npz(path) -> bool:
    p = Path(path)
    if p.suffix.lower() == ".npz":
        return True
    try:
        with open(p, "rb") as fh:
            return fh.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def _show(e):
    head = "" if e.get("model") == "plmdca" else f"heads={e['heads']} fields={'on' if e['fields'] else 'off'} "
    print(
        f"{head}lam={e['lam']:g}: val PL {e['val_nll']:.5f}  {e['fit']['reason']} in {e['fit']['iterations']} it., "
        f"grad {e['fit']['grad_norm']:.1e}",
        flush=True,
    )


def run_fit(args) -> int:
    if not _is_npz(args.data):
        from ._potts_protein import run_fit_alignment

        return run_fit_alignment(args)
    import jax

    from .. import families as fam
    from .. import potts as pt

    heads, fields = _check_options(args)
    for name in ("focus", "max_gap_column", "max_gap_sequence", "fmt", "init_from"):
        require(
            getattr(args, name) is None,
            name.replace("_", "-").replace("fmt", "format"),
            "applies to alignments, not to DATA.npz",
        )
    d = _load_data(args.data)
    s, val, test, C = _splits(d, args.C)
    L = s.shape[1]
    model = _truth(d)
    key = jax.random.PRNGKey(args.seed)
    report, out = {"model": args.model, "L": L, "C": C, "M": len(s), "n_val": len(val)}, {}
    w = wv = None
    if args.theta is not None:
        require(args.model != "transformer", "theta", "the transformer takes no sequence weights")
        fam.check_theta(args.theta, "theta")
        w, wv = fam.sequence_weights(s, args.theta), fam.sequence_weights(val, args.theta)
        report.update(theta=args.theta, M_eff=float(w.sum()))
        print(f"reweighting at identity {args.theta:g}: M_eff = {w.sum():.1f} of {len(s)}", flush=True)
    data = {"val": val, "test": test}
    if args.model == "transformer":
        cfg = pt.TransformerConfig(L, C, d_model=args.d_model, layers=args.layers, steps=args.steps, heads=heads[0])
        params, hist = pt.fit_transformer(key, s, val, cfg)
        report["history"] = hist
        report.update(pt.fa_metrics(params, model, data, nll=lambda x: pt.transformer_pl_loss(params, x, cfg.heads)))
    else:
        plm = args.model == "plmdca"
        settings = pt.data_settings(
            args.model,
            lams=args.lam,
            heads=heads,
            fields=fields,
            lam_fields=args.lam_fields,
            max_iter=args.max_iter,
            dtype=args.dtype,
        )
        from ._potts_protein import fit_budget

        settings, budget_entry = fit_budget(args, settings, L, C, len(s), sites_by_default=False)
        report.update(budget_entry)
        res = pt.fit_scan(
            key, s, val, C, settings, weights=w, val_weights=wv, progress=lambda e: _show({**e, "model": args.model})
        )
        params, best, scan = res.params, res.best, res.entries
        report.update(
            chosen={k: best[k] for k in ("heads", "fields", "lam")},
            fit=best["fit"],
            scan=scan,
            choice="smallest validation PL over the scan",
        )
        if plm:
            report["chosen"] = {"lam": best["lam"], "fields": True}
        if len(fields) == 2:
            report["fields_comparison"] = {
                ("with" if f else "without"): min(e["val_nll"] for e in scan if e["fields"] == f) for f in fields
            }
        K, b = pt.couplings_and_fields(params)
        out["couplings"] = K
        if b is not None:
            out["fields"] = b
        if not plm:
            out["A"] = np.asarray(pt.fa_attention(params))
            out["V"] = np.asarray(params.V)
        report.update(pt.fa_metrics(params, model, data))
    pt.atomic_savez(args.out, field="--out", **out)
    pt.atomic_write_json(Path(args.out).with_suffix(".json"), report, field="--out")
    print(json.dumps({k: v for k, v in report.items() if k not in ("history", "scan", "fit", "gauge")}, default=float))
    return 0


def run_contacts(args) -> int:
    from ._potts_protein import run_contacts as run

    return run(args)


# ---------------------------------------------------------------------------- replica
def run_replica(args) -> int:
    from .. import potts as pt

    positive(args.L, "L", integer=True)
    require(args.sites <= args.L, "sites", f"must be <= L={args.L}")
    for a in args.alphas:
        positive(a, "alphas")
    teacher = pt.gaussian_teacher(args.L, args.nu, args.seed)
    curves = pt.replica_curves(teacher, args.alphas, args.lam, sites=args.sites, reps=args.reps, seed=args.seed + 1)
    pt.atomic_savez(args.out, field="--out", **curves)
    if args.plot:
        pt.plot_replica(curves, args.plot)
    return 0
