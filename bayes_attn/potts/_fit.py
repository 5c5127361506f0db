"""One settings record for every pseudo-likelihood fit, one result record for the validation scan, and the
defaults for protein families (docs/potts_proteins.md §4).

:class:`FitSettings` names the model (``factored``, ``softmax`` or ``plmdca``), the candidate values
the scan visits (heads, lambdas, fields on/off), the fixed penalties, the stopping rule and the float
precision; :func:`fit_scan` fits every candidate and returns a :class:`ScanResult`.
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
from ._attention import LAM_FIELDS, FAConfig, fa_couplings, fit_lbfgs
from ._pl import block_rows, blocked_pl, coupling_logits, coupling_matrix, to_blocks
from ._plmdca import fit_plmdca

#: the models that :class:`FitSettings` (``model``) fits to an alignment
FIT_MODELS = ("factored", "softmax", "plmdca")
#: the floating-point precisions of a fit (``FitSettings.dtype``)
DTYPES = ("float32", "float64")
#: default number of heads of factored attention on protein families: the smallest validation PL among
#: 32, 64, 128 and 256 heads on the rhomboid family (benchmarks/potts_proteins/heads.py, docs/potts_proteins.md §4)
PROTEIN_HEADS = 256


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
    (factors of equal norm per head) instead of ``fa_init``'s equal entries."""

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
        if self.model == "plmdca":
            require(self.heads == (1,), "heads", "plmDCA has no heads")
            require(self.fields in ((True,), (False, True)), "fields", "plmDCA always fits fields")


class ScanResult(NamedTuple):
    """The chosen fit of a scan: ``params``, its ``config`` (``FAConfig``; ``None`` for plmDCA), its
    ``best`` entry, and every ``entries`` of {heads, fields, lam, val_nll, fit}."""

    params: dict
    config: FAConfig | None
    best: dict
    entries: list


def couplings_of(params: dict):
    """(K (L, L, C, C), fields (L, C) or None) as device arrays, for any fitted model."""
    if "W" in params:
        return params["W"], params["h"]
    return fa_couplings(params), params.get("b")


def pl_value(params: dict, s, weights=None) -> float:
    """The (weighted) PL loss of any fitted model on ``s``, through the coupling route in blocks."""
    K, b = couplings_of(params)
    L, C = K.shape[0], K.shape[-1]
    sb, wb = to_blocks(s, weights, C=C, rows=min(block_rows(L, C, len(s)), 4096), dtype=K.dtype)
    Km = coupling_matrix(K)
    return float(blocked_pl(lambda x: coupling_logits(Km, x, b), sb, wb))


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


def _fit_one(key, s, C, settings, heads, fields, lam, weights, init, progress):
    dtype = jnp.dtype(settings.dtype)
    h0 = profile_fields(s, C, weights) if settings.profile_fields else None
    if settings.model == "plmdca":
        p, info = fit_plmdca(s, C, lam, settings.lam_fields, max_iter=settings.max_iter, tol=settings.tol,
                             rtol=settings.rtol, weights=weights, dtype=dtype, progress=progress, fields=h0,
                             memory=settings.memory)
        return p, None, info
    cfg = FAConfig(s.shape[1], C, kind="free" if settings.model == "factored" else "softmax", heads=int(heads),
                   bias=bool(fields))
    if h0 is not None and fields and (init is None or "b" not in init):
        init = {**(init or {}), "b": h0}
    if settings.balanced_start and cfg.kind == "free" and (init is None or "A" not in init):
        init = {**fa_balanced_start(key, cfg), **(init or {})}
    p, info = fit_lbfgs(key, s, cfg, lam, max_iter=settings.max_iter, tol=settings.tol, rtol=settings.rtol,
                        params=init, lam_fields=LAM_FIELDS if settings.lam_fields is None else settings.lam_fields,
                        lam_J=settings.lam_J, weights=weights, dtype=dtype, progress=progress, memory=settings.memory)
    return p, cfg, info


def fit_scan(key, s, val, C: int, settings: FitSettings, *, weights=None, val_weights=None, init=None,
             progress=None, iteration=None) -> ScanResult:
    """Fit every candidate of ``settings`` on ``s`` and keep the smallest validation PL on ``val``.

    Lambdas are visited from the largest down, each fit warm-started from the previous one of the same
    (heads, fields) (``init``: a warm start for the first fit whose head count it matches).  ``weights`` / ``val_weights``:
    sequence weights of the training and validation PL.  ``progress(entry)`` after every fit;
    ``iteration(it, objective, gradient norm)`` inside every fit.  Ties: the first."""
    s, val = np.asarray(s), np.asarray(val)
    heads = (1,) if settings.model == "plmdca" else settings.heads
    fields = (True,) if settings.model == "plmdca" else settings.fields
    entries, best = [], None
    for h in heads:
        for f in fields:
            fits_init = init is not None and np.shape(init.get("V", np.zeros((0,))))[:1] == (h,)
            prev, prev_val = (init if fits_init else None), np.inf
            for lam in sorted(settings.lams, reverse=True):
                p, cfg, info = _fit_one(key, s, C, settings, h, f, lam, weights,
                                        None if settings.model == "plmdca" else prev, iteration)
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


def fa_balanced_start(key, cfg: FAConfig, norm: float = 1.0) -> dict:
    """A random start of free factored attention whose two factors have the same Frobenius norm in every
    head: A^h_ij ~ N(0, (norm / L)^2), V^h_ab ~ N(0, (norm / C)^2), so ||A^h|| ~ ||V^h|| ~ norm
    (docs/potts_proteins.md §4).  The product A (x) V is unchanged by A -> cA, V -> V / c; a start with equal
    entries (``fa_init``) puts L / C times more norm in A than in V, the curvatures of the two factors then
    differ by (L / C)^2, and L-BFGS spends its iterations undoing it (on the rhomboid family, 100 iterations
    from this start reach a lower objective than 500 from ``fa_init``).  The penalty on the factors is
    smallest at equal norms, so this start also sits where the optimum puts the scale.  No fields."""
    require(cfg.kind == "free", "model", "a balanced start is for free factored attention")
    kA, kV = jax.random.split(key)
    return {"A": jax.random.normal(kA, (cfg.heads, cfg.L, cfg.L)) * (norm / cfg.L),
            "V": jax.random.normal(kV, (cfg.heads, cfg.C, cfg.C)) * (norm / cfg.C)}


def fa_from_couplings(K, fields=None, heads: int = PROTEIN_HEADS) -> dict:
    """Factored-attention parameters closest to couplings K (L, L, C, C) in Frobenius norm: the top ``heads``
    terms of the singular value decomposition of K as an ``(L*L, C*C)`` matrix, A^h = sqrt(s_h) u_h and
    V^h = sqrt(s_h) v_h (the best sum of ``heads`` Kronecker products, Eckart-Young); ``fields`` are kept as
    the bias.  A warm start for factored attention from any fit (``potts fit --init-from``)."""
    K = np.asarray(K, np.float64)
    require(K.ndim == 4 and K.shape[0] == K.shape[1] and K.shape[2] == K.shape[3], "init-from",
            f"couplings must have shape (L, L, C, C), got {K.shape}")
    positive(heads, "heads", integer=True)
    L, C = K.shape[0], K.shape[-1]
    require(heads <= min(L * L, C * C), "heads", f"must be <= {min(L * L, C * C)} to start from couplings")
    Km = (K * (1.0 - np.eye(L))[:, :, None, None]).reshape(L * L, C * C)
    u, sv, vt = np.linalg.svd(Km, full_matrices=False)
    r = np.sqrt(sv[:heads])
    p = {"A": (u[:, :heads] * r).T.reshape(heads, L, L), "V": (vt[:heads] * r[:, None]).reshape(heads, C, C)}
    if fields is not None:
        p["b"] = np.asarray(fields, np.float64)
    return p


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
    base = FitSettings(model=model, fields=(True,), max_iter=500, tol=1e-5, rtol=1e-5, dtype="float32",
                       profile_fields=True, memory=10, balanced_start=model == "factored")
    if model == "plmdca":
        return replace(base, lams=(lam_J,), fields=(True,), lam_fields=lam_h)
    return replace(base, heads=(heads or PROTEIN_HEADS,), fields=(True,), lams=(lam_h,), lam_fields=lam_h,
                   lam_J=lam_J, max_iter=200)


__all__ = ["FIT_MODELS", "DTYPES", "PROTEIN_HEADS", "FitSettings", "ScanResult", "couplings_of", "pl_value",
           "fit_scan", "protein_settings", "profile_fields", "fa_balanced_start", "fa_from_couplings"]
