"""Asymmetric plmDCA baseline (potts.md §7.1): per-site multinomial logistic regression with
fields ``h`` (L, C) and free couplings ``W`` (L, L, C, C) (W[i, j, a, b] couples colour a at i
to colour b at j; W[i, i] masked), L2 penalties, L-BFGS to convergence.

Normalisation (project choice, potts.md §4.1/§7.1): the objective is the PL loss averaged over
all M*L terms plus ``lam_J ||W||^2 + lam_h ||h||^2``; PlmDCA.jl's per-site units are L * lam.
Logits are one matrix product of the one-hot data with W (see :func:`plm_logits`); the PL is
weighted and blocked over sequences (docs/potts_proteins.md §2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import require
from ._attention import FitInfo, lbfgs
from ._params import PlmParams, as_params
from ._pl import blocked_pl, coupling_logits, coupling_matrix, to_blocks


#: plmDCA's L2 weight on the couplings and fields of a synthetic data set, in the M*L-averaged units of
#: (7.1c) (docs/potts.md §7.1; docs/potts_choices.md "Baselines"): PlmDCA.jl's 0.01 per site divided by the
#: L = 20 of the synthetic benchmarks, fitted as it is (no scan).  Protein families use
#: :func:`~bayes_attn.potts.protein_settings` instead.
PLM_LAM = 5e-4


def plm_logits(params: PlmParams, s) -> jax.Array:
    """logits_i(a) = h_i(a) + sum_{j != i} W_ij(a, s_j), (M, L, C).

    Computed as one matrix product of the one-hot data (M, L*C) with W arranged as
    (L*C [j, b], L*C [i, a]) (:func:`coupling_logits`): faster than gathering W[i, j, :, s_j] on a
    CPU and without the (M, L, L, C) intermediate."""
    params = as_params(params)
    return coupling_logits(coupling_matrix(params.W), jnp.asarray(s), params.h)


def plm_couplings(params: PlmParams) -> np.ndarray:
    """Coupling tensor (L, L, C, C) with the diagonal blocks zeroed (§7.1, before symmetrisation)."""
    W = np.asarray(as_params(params).W)
    return W * (1.0 - np.eye(W.shape[0]))[:, :, None, None]


def fit_plmdca(
    s,
    C: int,
    lam_J: float = PLM_LAM,
    lam_h: float | None = None,
    *,
    max_iter: int = 1000,
    tol: float = 1e-5,
    rtol: float = 1e-9,
    weights=None,
    dtype=None,
    progress=None,
    fields=None,
    memory: int = 20,
):
    """Fit asymmetric plmDCA by full-batch L-BFGS from zero couplings; returns (:class:`PlmParams`, FitInfo).

    ``FitInfo.converged`` / ``FitInfo.reason`` say whether the gradient norm reached ``tol`` or the
    objective stopped decreasing (``rtol``) (§7.1: an early-stopped run is not a baseline).
    ``weights`` (M,): sequence weights of the PL (default all 1); ``dtype``: float precision (default
    float64); ``progress``: see :func:`lbfgs`; ``fields`` (L, C): a start for h (default zero)."""
    s = np.asarray(s)
    M, L = s.shape
    require(lam_J >= 0, "lam_J", f"must be >= 0, got {lam_J}")
    lam_h = lam_J if lam_h is None else lam_h
    require(lam_h >= 0, "lam_h", f"must be >= 0, got {lam_h}")
    dt = jnp.dtype(dtype or jnp.float64)
    p0 = PlmParams(jnp.zeros((L, L, C, C), dt), jnp.zeros((L, C), dt) if fields is None else jnp.asarray(fields, dt))
    sb, wb = to_blocks(s, weights, C=C, dtype=dt)
    return lbfgs(
        _objective,
        p0,
        sb,
        wb,
        jnp.asarray(lam_J, dt),
        jnp.asarray(lam_h, dt),
        max_iter=max_iter,
        tol=tol,
        rtol=rtol,
        progress=progress,
        memory=memory,
    )


def _objective(p, sb, wb, lam_J, lam_h):
    mask = (1.0 - jnp.eye(p.W.shape[0], dtype=p.W.dtype))[:, :, None, None]
    Wm = coupling_matrix(p.W)
    return (
        blocked_pl(lambda s: coupling_logits(Wm, s, p.h), sb, wb)
        + lam_J * jnp.sum((p.W * mask) ** 2)
        + lam_h * jnp.sum(p.h**2)
    )


__all__ = ["PLM_LAM", "plm_logits", "plm_couplings", "fit_plmdca", "FitInfo"]
