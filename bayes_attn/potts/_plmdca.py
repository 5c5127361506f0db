"""Asymmetric plmDCA baseline (potts.md §7.1): per-site multinomial logistic regression with
fields ``h`` (L, C) and free couplings ``W`` (L, L, C, C) (W[i, j, a, b] couples colour a at i
to colour b at j; W[i, i] masked), L2 penalties, L-BFGS to convergence.

Normalisation (project choice, potts.md §4.1/§7.1): the objective is the PL loss averaged over
all M*L terms plus ``lam_J ||W||^2 + lam_h ||h||^2``; PlmDCA.jl's per-site units are L * lam.
Logits are one matrix product of the one-hot data with W (see :func:`plm_logits`); the PL is
weighted and blocked over sequences (docs/potts_proteins.md §2).

**Blocks of sites** (docs/potts_proteins.md §4, "Blocks of sites").  Site i's conditional depends only on
``h_i`` and ``W_i = W[i]`` and so does its share of the penalty: the objective is a sum of one term per site
and its minimiser is that of every site's own problem.  ``site_block = k`` fits the sites k at a time, one
after another, each block by its own L-BFGS (:func:`fit_plmdca_sites`): the couplings are held once (a NumPy
array) and only one block's optimiser state is alive, so memory grows as L^2 C^2 once instead of as the
(2 * memory + 6) copies of the joint fit.  Same objective, same minimiser; the optimisation path differs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import nonnegative_int, require
from ._attention import FitInfo, lbfgs
from ._params import PlmParams, as_params
from ._pl import (
    blocked_pl,
    coupling_logits,
    coupling_matrix,
    one_hot_rows,
    site_blocks,
    site_logits,
    to_blocks,
    weighted_nll_sum,
)


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
    """Coupling tensor (L, L, C, C) with the diagonal blocks zeroed (§7.1, before symmetrisation), in W's
    precision.  W itself (no copy: the couplings of a long family are held once) when its diagonal blocks are
    already zero, as a fit leaves them; else a masked copy."""
    W = np.asarray(as_params(params).W)
    i = np.arange(W.shape[0])
    if not W[i, i].any():
        return W
    return W * (1.0 - np.eye(W.shape[0], dtype=W.dtype))[:, :, None, None]


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
    site_block: int = 0,
    block_progress=None,
):
    """Fit asymmetric plmDCA by full-batch L-BFGS from zero couplings; returns (:class:`PlmParams`, FitInfo).

    ``FitInfo.converged`` / ``FitInfo.reason`` say whether the gradient norm reached ``tol`` or the
    objective stopped decreasing (``rtol``) (§7.1: an early-stopped run is not a baseline).
    ``weights`` (M,): sequence weights of the PL (default all 1); ``dtype``: float precision (default
    float64); ``progress``: see :func:`lbfgs`; ``fields`` (L, C): a start for h (default zero).
    ``site_block``: 0 fits every site at once (one L-BFGS); k > 0 fits blocks of k sites one after another
    (:func:`fit_plmdca_sites`, the same minimiser in bounded memory; ``block_progress(sites_done, L, info)``
    after each block)."""
    s = np.asarray(s)
    M, L = s.shape
    require(lam_J >= 0, "lam_J", f"must be >= 0, got {lam_J}")
    lam_h = lam_J if lam_h is None else lam_h
    require(lam_h >= 0, "lam_h", f"must be >= 0, got {lam_h}")
    nonnegative_int(site_block, "site_block")
    dt = jnp.dtype(dtype or jnp.float64)
    if site_block and site_block < L:
        return fit_plmdca_sites(
            s,
            C,
            lam_J,
            lam_h,
            site_block=site_block,
            max_iter=max_iter,
            tol=tol,
            rtol=rtol,
            weights=weights,
            dtype=dt,
            progress=progress,
            fields=fields,
            memory=memory,
            block_progress=block_progress,
        )
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


def fit_plmdca_sites(
    s,
    C: int,
    lam_J: float,
    lam_h: float,
    *,
    site_block: int,
    max_iter: int,
    tol: float,
    rtol: float,
    weights=None,
    dtype=jnp.float32,
    progress=None,
    fields=None,
    memory: int = 20,
    block_progress=None,
):
    """plmDCA fitted ``site_block`` sites at a time (module docstring; docs/potts_proteins.md §4).

    Block B = [i0, i1) minimises its share of the objective, rescaled by L / |B| so that it is on the scale
    of the joint objective (a weighted mean over its |B| M terms plus (L / |B|) times its penalties): the
    relative-decrease rule ``rtol`` then means what it means for the joint fit, and the gradient tolerance of
    a block is ``tol * sqrt(L / |B|)`` on the rescaled gradient, i.e. ``tol * sqrt(|B| / L)`` on the block's
    share of the joint gradient, so the joint gradient norm is at most ``tol`` when every block stops on it.
    Returns (:class:`PlmParams` with NumPy arrays of ``dtype``, FitInfo): loss and gradient norm of the joint
    objective (recombined from the blocks), the largest iteration count of a block, converged when every
    block converged, and the reason of the first block that did not (else ``"objective"`` when one block
    stopped on it, else ``"gradient"``)."""
    M, L = s.shape
    dt = jnp.dtype(dtype)
    W = np.zeros((L, L, C, C), dt)
    h = np.zeros((L, C), dt) if fields is None else np.array(fields, dt)
    sj = jnp.asarray(s, jnp.int32)
    X = one_hot_rows(sj, C, dt)
    w = jnp.asarray(np.ones(M) if weights is None else np.asarray(weights, float), dt)
    loss, g2, its, infos = 0.0, 0.0, 0, []
    for i0, i1 in site_blocks(L, site_block):
        nb = i1 - i0
        scale = L / nb
        p0 = PlmParams(jnp.zeros((nb, L, C, C), dt), jnp.asarray(h[i0:i1]))
        p, info = lbfgs(
            _site_objective,
            p0,
            X,
            sj,
            w,
            jnp.arange(i0, i1),
            jnp.asarray(lam_J * scale, dt),
            jnp.asarray(lam_h * scale, dt),
            max_iter=max_iter,
            tol=tol * np.sqrt(scale),
            rtol=rtol,
            progress=progress,
            memory=memory,
        )
        W[i0:i1], h[i0:i1] = np.asarray(p.W), np.asarray(p.h)
        del p
        loss += info.loss / scale
        g2 += (info.grad_norm / scale) ** 2
        its = max(its, info.iterations)
        infos.append(info)
        if block_progress is not None:
            block_progress(i1, L, info)
    bad = [i for i in infos if not i.converged]
    reason = bad[0].reason if bad else ("objective" if any(i.reason == "objective" for i in infos) else "gradient")
    rel = max(i.rel_decrease for i in infos)
    return PlmParams(W, h), FitInfo(float(loss), float(np.sqrt(g2)), its, not bad, reason, float(rel))


def _site_objective(p, X, s, w, sites, lam_J, lam_h):
    """Block B's share of (7.1c), rescaled by L / |B|: the weighted mean of its conditional terms + penalties.
    ``X`` (M, L*C): the one-hot sequences, built once for every block; ``p.W`` (|B|, L, C, C): rows ``sites``
    of W (W[i, i] masked as in the joint fit, :func:`site_logits`)."""
    L = p.W.shape[1]
    mask = (sites[:, None] != jnp.arange(L)[None, :]).astype(p.W.dtype)[:, :, None, None]
    nll = weighted_nll_sum(site_logits(X, p.W, sites, p.h), s[:, sites], w)
    return nll / (jnp.sum(w) * sites.shape[0]) + lam_J * jnp.sum((p.W * mask) ** 2) + lam_h * jnp.sum(p.h**2)


__all__ = ["PLM_LAM", "plm_logits", "plm_couplings", "fit_plmdca", "fit_plmdca_sites", "FitInfo"]
