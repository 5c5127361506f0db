"""One settings record for every pseudo-likelihood fit, one result record for the validation scan, and the
defaults for protein families (docs/potts_proteins.md §4).

:class:`FitSettings` names the model (``factored``, ``softmax`` or ``plmdca``), the candidate values
the scan visits (heads, lambdas, fields on/off), the fixed penalties, the stopping rule and the float
precision; :func:`fit_scan` fits every candidate and returns a :class:`ScanResult`.

The lambda choice of every model lives here: :func:`data_settings` for sequences drawn from a Potts model
(factored and softmax attention walk :data:`LAM_GRID` down on the validation PL; plmDCA fits
:data:`~bayes_attn.potts.PLM_LAM`), :func:`protein_settings` for protein families (below).
:func:`protein_settings` converts the public tools' regularisation (pydca / CCMpred:
``lambda_J = 0.2 (L - 1)``, ``lambda_h = 1`` on the weighted *sum* over sequences) to this package's
objective, which is the weighted *mean* over the M_eff * L conditional terms:
``lam_J = 0.2 (L - 1) / (2 L M_eff)`` (the factor 2: our asymmetric couplings penalise W_ij and W_ji,
both estimates of one symmetric J_ij) and ``lam_h = 1 / (L M_eff)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import nonnegative_int, one_of, positive, require
from ._model import check_weights
from ._attention import LAM_FIELDS, FAConfig, fa_couplings, fit_lbfgs
from ._params import FA_PARAMS, FactoredParams, PlmParams, SoftmaxParams, as_params
from ._pl import (
    block_rows,
    blocked_pl,
    coupling_logits,
    coupling_matrix,
    one_hot_rows,
    site_blocks,
    site_logits,
    to_blocks,
    weighted_nll_sum,
)
from ._plmdca import PLM_LAM, fit_plmdca
from ._starts import PROTEIN_HEADS, fa_balanced_start

#: the models that :class:`FitSettings` (``model``) fits to an alignment
FIT_MODELS = ("factored", "softmax", "plmdca")
#: the floating-point precisions of a fit (``FitSettings.dtype``)
DTYPES = ("float32", "float64")

#: Default L2 grid of the validation scan of factored and softmax attention on data sets (project choice,
#: docs/potts.md §4.1, docs/potts_choices.md): half-decade steps from 1e-3 down to 1e-6, visited from the
#: largest down with the lambda path stopped once the validation PL rises.  The old default {1e-3, 1e-4, 1e-5}
#: chose its smallest value at every M >= 10 000 of the recovery grid, i.e. the optimum lay outside it; the
#: grid now brackets it there.
LAM_GRID = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6)


@dataclass(frozen=True)
class FitSettings:
    """Settings of a pseudo-likelihood fit and of its validation scan (validated).

    ``lams``: candidate L2 weights (factored/softmax: on the attention and value weights; plmDCA: on
    the couplings W).  ``heads`` and ``fields``: candidates of factored/softmax (plmDCA has no heads
    and always has fields).  ``lam_fields``: L2 weight on the fields (plmDCA: ``None`` = the lambda
    of the entry).  ``lam_J``: L2 weight on the effective couplings K of factored attention.
    ``stop_when_worse``: stop a lambda path (visited from the largest down) once the validation PL
    rises.  ``profile_fields``: start the fields at the independent-site model (:func:`profile_fields`)
    instead of zero.  ``memory``: the number of L-BFGS correction pairs kept (each two copies of the
    parameters).  ``balanced_start``: start free factored attention at :func:`fa_balanced_start`
    (factors of equal norm per head) instead of ``fa_init``'s equal entries.  ``site_block``: plmDCA only,
    0 = every site in one L-BFGS, k = blocks of k sites one after another (:func:`fit_plmdca_sites`; the CLI
    chooses k by memory, :func:`plm_site_block`)."""

    model: str = "factored"
    heads: tuple = (1,)
    lams: tuple = (1e-4,)
    fields: tuple = (False,)
    lam_fields: float | None = LAM_FIELDS
    lam_J: float = 0.0
    max_iter: int = 3000
    tol: float = 1e-6
    rtol: float = 1e-9
    stop_when_worse: bool = False
    dtype: str = "float64"
    profile_fields: bool = False
    memory: int = 20
    balanced_start: bool = False
    site_block: int = 0

    def __post_init__(self):
        one_of(self.model, FIT_MODELS, "model")
        one_of(self.dtype, DTYPES, "dtype")
        object.__setattr__(self, "heads", tuple(int(h) if isinstance(h, (int, np.integer)) else h for h in self.heads))
        object.__setattr__(self, "lams", tuple(float(x) for x in self.lams))
        object.__setattr__(self, "fields", tuple(bool(f) for f in self.fields))
        require(len(self.lams) > 0, "lam", "needs at least one value")
        for lam in self.lams:
            require(bool(np.isfinite(lam)) and lam >= 0, "lam", f"must be >= 0, got {lam}")
        for h in self.heads:
            positive(h, "heads", integer=True)
        for name in ("lam_fields", "lam_J", "tol", "rtol"):
            v = getattr(self, name)
            if v is not None:
                require(bool(np.isfinite(v)) and v >= 0, name.replace("_", "-"), f"must be >= 0, got {v}")
        nonnegative_int(self.max_iter, "max-iter")
        positive(self.memory, "memory", integer=True)
        nonnegative_int(self.site_block, "site-block")
        require(
            self.site_block == 0 or self.model == "plmdca", "site-block", "only plmDCA is fitted by blocks of sites"
        )
        if self.model == "plmdca":
            require(self.heads == (1,), "heads", "plmDCA has no heads")
            require(self.fields in ((True,), (False, True)), "fields", "plmDCA always fits fields")


class ScanResult(NamedTuple):
    """The chosen fit of a scan: ``params`` (its model's record), its ``config`` (``FAConfig``; ``None`` for
    plmDCA), its ``best`` entry, and every ``entries`` of {heads, fields, lam, val_nll, fit}."""

    params: FactoredParams | SoftmaxParams | PlmParams
    config: FAConfig | None
    best: dict
    entries: list


def couplings_of(params):
    """(K (L, L, C, C), fields (L, C) or None) as device arrays, for any fitted model's record."""
    params = as_params(params)
    if isinstance(params, PlmParams):
        return params.W, params.h
    return fa_couplings(params), params.b


def pl_value(params, s, weights=None) -> float:
    """The (weighted) PL loss of any fitted model on ``s``, through the coupling route in blocks.  ``weights``
    are checked as every PL's (:func:`check_weights`: one line naming the field)."""
    weights = check_weights(weights, len(s))
    K, b = couplings_of(params)
    L, C = K.shape[0], K.shape[-1]
    sb, wb = to_blocks(s, weights, C=C, rows=min(block_rows(L, C, len(s)), 4096), dtype=K.dtype)
    if (L * C) ** 2 <= PL_SITES_ELEMENTS:
        Km = coupling_matrix(K)
        return float(blocked_pl(lambda x: coupling_logits(Km, x, b), sb, wb))
    # large L: the (L*C)^2 matrix a few sites at a time, so K is held once (docs/potts_proteins.md §4)
    k = max(1, PL_SITES_ELEMENTS // (L * C * C))
    total = sum(float(_sites_nll(K[a:z], None if b is None else b[a:z], sb, wb, a)) for a, z in site_blocks(L, k))
    return total / (float(jnp.sum(wb)) * L)


#: :func:`pl_value` forms the whole (L*C)^2 coupling matrix up to this many numbers, else blocks of sites
PL_SITES_ELEMENTS = 1 << 26


@jax.jit
def _sites_nll(Kb, bb, sb, wb, i0):
    """sum_m w_m sum_{i in block} -log p(s_mi | rest) over the sites i0 .. i0 + |Kb| (couplings rows Kb)."""
    sites = i0 + jnp.arange(Kb.shape[0])
    one = lambda s, w: weighted_nll_sum(
        site_logits(one_hot_rows(s, Kb.shape[-1], Kb.dtype), Kb, sites, bb), s[:, sites], w
    )  # noqa: E731
    return jax.lax.map(lambda a: one(*a), (sb, wb)).sum()


def profile_fields(s, C: int, weights=None, pseudocount: float = 0.5) -> np.ndarray:
    """Fields of the independent-site model, log(f_i(a) + pseudocount / M_eff) centred over colours, with
    f the weighted colour frequencies (L, C): the optimum of the PL without couplings, up to the
    pseudocount.  A start for the fields of every protein fit: the couplings then start learning at once."""
    s = np.asarray(s)
    w = np.ones(len(s)) if weights is None else np.asarray(weights, float)
    f = np.zeros((s.shape[1], C))
    np.add.at(f, (np.broadcast_to(np.arange(s.shape[1]), s.shape), s), w[:, None])
    h = np.log(f / w.sum() + pseudocount / w.sum())
    return h - h.mean(1, keepdims=True)


def _fit_one(key, s, C, settings, heads, fields, lam, weights, init, progress, block=None):
    dtype = jnp.dtype(settings.dtype)
    h0 = profile_fields(s, C, weights) if settings.profile_fields else None
    if settings.model == "plmdca":
        p, info = fit_plmdca(
            s,
            C,
            lam,
            settings.lam_fields,
            max_iter=settings.max_iter,
            tol=settings.tol,
            rtol=settings.rtol,
            weights=weights,
            dtype=dtype,
            progress=progress,
            fields=h0,
            memory=settings.memory,
            site_block=settings.site_block,
            block_progress=block,
        )
        return p, None, info
    cfg = FAConfig(
        s.shape[1], C, kind="free" if settings.model == "factored" else "softmax", heads=int(heads), bias=bool(fields)
    )
    if isinstance(init, FactoredParams if cfg.kind == "softmax" else SoftmaxParams):  # V and b carry over
        init = (
            SoftmaxParams(None, None, None, init.V, init.b)
            if cfg.kind == "softmax"
            else FactoredParams(None, init.V, init.b)
        )
    if h0 is not None and fields and (init is None or init.b is None):
        empty = FactoredParams(None, None) if cfg.kind == "free" else SoftmaxParams(None, None, None, None)
        init = (empty if init is None else init)._replace(b=h0)
    if settings.balanced_start and cfg.kind == "free" and (init is None or init.A is None):
        start = fa_balanced_start(key, cfg)
        init = start if init is None else init._replace(A=start.A, V=start.V if init.V is None else init.V)
    p, info = fit_lbfgs(
        key,
        s,
        cfg,
        lam,
        max_iter=settings.max_iter,
        tol=settings.tol,
        rtol=settings.rtol,
        params=init,
        lam_fields=LAM_FIELDS if settings.lam_fields is None else settings.lam_fields,
        lam_J=settings.lam_J,
        weights=weights,
        dtype=dtype,
        progress=progress,
        memory=settings.memory,
    )
    return p, cfg, info


def fit_scan(
    key,
    s,
    val,
    C: int,
    settings: FitSettings,
    *,
    weights=None,
    val_weights=None,
    init=None,
    progress=None,
    iteration=None,
    block=None,
) -> ScanResult:
    """Fit every candidate of ``settings`` on ``s`` and keep the smallest validation PL on ``val``.

    Lambdas are visited from the largest down, each fit warm-started from the previous one of the same
    (heads, fields) (``init``: a parameter record, a warm start for the first fit whose head count it matches;
    its ``None`` fields are initialised as usual).  ``weights`` / ``val_weights``:
    sequence weights of the training and validation PL.  ``progress(entry)`` after every fit;
    ``iteration(it, objective, gradient norm)`` inside every fit; ``block(sites_done, L, FitInfo)`` after each
    block of sites of a plmDCA fit by blocks.  Ties: the first."""
    s, val = np.asarray(s), np.asarray(val)
    weights = None if weights is None else check_weights(weights, len(s))
    val_weights = None if val_weights is None else check_weights(val_weights, len(val), "val_weights")
    init = None if init is None else as_params(init, "init")
    heads = (1,) if settings.model == "plmdca" else settings.heads
    fields = (True,) if settings.model == "plmdca" else settings.fields
    entries, best = [], None
    for h in heads:
        for f in fields:
            fits_init = isinstance(init, FA_PARAMS) and init.V is not None and np.shape(init.V)[:1] == (h,)
            prev, prev_val = (init if fits_init else None), np.inf
            for lam in sorted(settings.lams, reverse=True):
                p, cfg, info = _fit_one(
                    key,
                    s,
                    C,
                    settings,
                    h,
                    f,
                    lam,
                    weights,
                    None if settings.model == "plmdca" else prev,
                    iteration,
                    block,
                )
                v = pl_value(p, val, val_weights) if len(val) else float("nan")
                entry = {"heads": int(h), "fields": bool(f), "lam": float(lam), "val_nll": v, "fit": info._asdict()}
                if f and settings.model != "plmdca":
                    entry["lam_fields"] = float(LAM_FIELDS if settings.lam_fields is None else settings.lam_fields)
                entries.append(entry)
                if progress:
                    progress(entry)
                if best is None or v < best[2]["val_nll"]:
                    best = (p, cfg, entry)
                if settings.stop_when_worse and v > prev_val:
                    break
                prev, prev_val = p, v
    return ScanResult(best[0], best[1], best[2], entries)


def default_lams(model: str) -> tuple[float, ...]:
    """The lambda candidates of a fit to a data set when none are given: :data:`LAM_GRID` for factored and
    softmax attention (walked down on the validation PL, :func:`data_settings`), the one value
    :data:`~bayes_attn.potts.PLM_LAM` for plmDCA (docs/potts.md §4.1 and §7.1)."""
    one_of(model, FIT_MODELS, "model")
    return (PLM_LAM,) if model == "plmdca" else LAM_GRID


def data_settings(
    model: str,
    *,
    lams=None,
    heads=None,
    fields=(False, True),
    lam_fields: float | None = None,
    max_iter: int = 3000,
    dtype: str | None = None,
) -> FitSettings:
    """Settings of a fit to sequences of a data set (``bayes-attn potts fit DATA.npz``; alignments of protein
    families: :func:`protein_settings`), with the lambda choice of every model (docs/potts.md §4.1, §7.1;
    docs/potts_choices.md "Hyper-parameters on validation" and "Baselines").

    ``lams``: candidate L2 weights, every one fitted and the smallest validation PL kept; ``None``: the
    defaults of :func:`default_lams`, where factored and softmax attention stop their lambda path once the
    validation PL rises.  ``heads`` (default 1), ``fields`` (default: without and with) are the other
    candidates.  ``lam_fields``: the field weight of factored/softmax attention (``None``:
    :data:`~bayes_attn.potts.LAM_FIELDS`); plmDCA's field weight is its lambda.  Gradient tolerance 1e-6
    (plmDCA 1e-5, as the public implementations), at most ``max_iter`` L-BFGS iterations, float64 unless
    ``dtype`` says otherwise."""
    one_of(model, FIT_MODELS, "model")
    plm = model == "plmdca"
    require(
        not (plm and lam_fields is not None),
        "lam-fields",
        "only factored and softmax fits have a field weight of their own",
    )
    return FitSettings(
        model,
        heads=tuple(heads or (1,)),
        lams=tuple(lams) if lams else default_lams(model),
        fields=tuple(fields),
        lam_fields=None if plm else LAM_FIELDS if lam_fields is None else lam_fields,
        max_iter=max_iter,
        tol=1e-5 if plm else 1e-6,
        stop_when_worse=not plm and not lams,
        dtype=dtype or "float64",
    )


def protein_settings(model: str, L: int, M_eff: float, *, heads: int | None = None) -> FitSettings:
    """Defaults for a protein family of L columns and M_eff effective sequences (module docstring):
    plmDCA with pydca's regularisation converted to this objective; factored attention with
    :data:`PROTEIN_HEADS` heads, fields, the same coupling and field weights on K and b, and a small L2
    weight on the factors (it only fixes the scale between A and V).  float32, fields started at the
    independent-site model, at most 500 L-BFGS iterations (pydca's budget; 200 for factored attention, so that
    a family of L <= 160, M <= 5000 fits in 10 minutes on 2 cores) keeping 10 correction pairs, and a
    stop once the objective's relative decrease stays below 1e-5 (pydca stops at 1e-4)."""
    one_of(model, FIT_MODELS, "model")
    positive(L, "L", integer=True)
    positive(float(M_eff), "M_eff")
    lam_J = 0.2 * (L - 1) / (2 * L * M_eff)
    lam_h = 1.0 / (L * M_eff)
    base = FitSettings(
        model=model,
        fields=(True,),
        max_iter=500,
        tol=1e-5,
        rtol=1e-5,
        dtype="float32",
        profile_fields=True,
        memory=10,
        balanced_start=model == "factored",
    )
    if model == "plmdca":
        return replace(base, lams=(lam_J,), fields=(True,), lam_fields=lam_h)
    return replace(
        base,
        heads=(heads or PROTEIN_HEADS,),
        fields=(True,),
        lams=(lam_h,),
        lam_fields=lam_h,
        lam_J=lam_J,
        max_iter=200,
    )


__all__ = [
    "FIT_MODELS",
    "DTYPES",
    "LAM_GRID",
    "FitSettings",
    "ScanResult",
    "couplings_of",
    "pl_value",
    "fit_scan",
    "default_lams",
    "data_settings",
    "protein_settings",
    "profile_fields",
]
