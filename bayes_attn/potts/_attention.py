"""Factored self-attention (potts.md §3) trained by MLM / pseudo-likelihood (§4).

Parameters are records (:mod:`._params`, JAX pytrees):

* ``kind="free"`` (FA-free, exact): :class:`FactoredParams`, ``A`` (H, L, L) free, diagonal masked;
  ``V`` (H, C, C).
* ``kind="softmax"``: :class:`SoftmaxParams`, positional embeddings ``P`` (L, d_p) used only in the
  attention, ``WQ``, ``WK`` (H, d_k, d_p); ``A^h_ij = softmax_{j != i}((WQ p_i).(WK p_j)/sqrt(d_k))``,
  row-stochastic and the same for every sequence; ``V`` (H, C, C).
* optional per-site bias ``b`` (L, C) (plays beta h); ``None`` without fields.

Logits ``z_i(a) = sum_h sum_{j != i} A^h_ij V^h[a, s_j] + b_i(a)`` for all sites in one pass
(§3.2); because ``A_ii = 0`` the output at i never sees ``s_i`` and the mean of the one-mask
MLM losses over the masked position is the all-site PL loss (§4, :func:`mlm_loss`).
Regularisation (§4.1, project choice): ``lam * sum of squared weights`` added to the loss
averaged over the M*L conditional terms.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._errors import nonnegative_int, one_of, positive, require
from ._model import pseudo_nll
from ._params import FactoredParams, SoftmaxParams, as_params
from ._pl import blocked_pl, coupling_logits, coupling_matrix, to_blocks, use_coupling_route

#: the parametrisations of factored attention (``FAConfig.kind``): free attention matrices, or a softmax of
#: query-key scores of positional embeddings
KINDS = ("free", "softmax")


@dataclass(frozen=True)
class FAConfig:
    """Factored-attention architecture (validated)."""

    L: int
    C: int
    kind: str = "free"
    heads: int = 1
    d_pos: int = 16
    d_k: int = 16
    bias: bool = False

    def __post_init__(self):
        positive(self.L, "L", integer=True)
        positive(self.C, "C", integer=True)
        one_of(self.kind, KINDS, "model.kind")
        positive(self.heads, "model.heads", integer=True)
        positive(self.d_pos, "model.d_pos", integer=True)
        positive(self.d_k, "model.d_k", integer=True)


def fa_init(key, cfg: FAConfig, scale: float = 0.1) -> FactoredParams | SoftmaxParams:
    """Small random initialisation (both factors nonzero: the loss is bilinear in (A, V))."""
    H, L, C = cfg.heads, cfg.L, cfg.C
    k = jax.random.split(key, 5)
    V = scale * jax.random.normal(k[0], (H, C, C))
    b = jnp.zeros((L, C)) if cfg.bias else None
    if cfg.kind == "free":
        return FactoredParams(scale * jax.random.normal(k[1], (H, L, L)), V, b)
    return SoftmaxParams(
        jax.random.normal(k[2], (L, cfg.d_pos)),
        jax.random.normal(k[3], (H, cfg.d_k, cfg.d_pos)) / np.sqrt(cfg.d_pos),
        jax.random.normal(k[4], (H, cfg.d_k, cfg.d_pos)) / np.sqrt(cfg.d_pos),
        V * 10,
        b,
    )


def fa_attention(params: FactoredParams | SoftmaxParams) -> jax.Array:
    """Attention matrices (H, L, L) with zero diagonal (§3.2)."""
    params = as_params(params)
    if isinstance(params, FactoredParams):
        A = params.A
        return A * (1.0 - jnp.eye(A.shape[-1], dtype=A.dtype))
    q = jnp.einsum("hkd,ld->hlk", params.WQ, params.P)
    k = jnp.einsum("hkd,ld->hlk", params.WK, params.P)
    scores = jnp.einsum("hik,hjk->hij", q, k) / jnp.sqrt(q.shape[-1])
    L = scores.shape[-1]
    scores = jnp.where(jnp.eye(L, dtype=bool), -jnp.inf, scores)
    return jax.nn.softmax(scores, axis=-1)


def fa_logits(params: FactoredParams | SoftmaxParams, s) -> jax.Array:
    """All-site conditional logits (M, L, C) of factored attention (§3.2)."""
    params = as_params(params)
    A = fa_attention(params)
    # z_i(a) = sum_h sum_j A^h_ij V^h[a, s_j]: gather the columns V[:, s_j] (O(M L^2 C)) instead
    # of contracting a one-hot (M, L, C) with V (one more O(M L C^2) pass)
    Vs = jnp.swapaxes(params.V, -1, -2)[:, jnp.asarray(s)]  # (H, M, L, C)
    Z = jnp.einsum("hij,hmjc->mic", A, Vs)
    if params.b is not None:
        Z = Z + params.b
    return Z


def fa_couplings(params: FactoredParams | SoftmaxParams) -> jax.Array:
    """Effective couplings K_ij(a, b) = sum_h A^h_ij V^h_ab, (L, L, C, C), zero for i = j (§5)."""
    params = as_params(params)
    return jnp.einsum("hij,hab->ijab", fa_attention(params), params.V)


def fa_penalty(params: FactoredParams | SoftmaxParams) -> jax.Array:
    """Sum of squared weights (L2 on A and V, or on P, WQ, WK, V for the softmax variant; not on b)."""
    params = as_params(params)
    weights = (params.V, params.A) if isinstance(params, FactoredParams) else (params.V, params.P, params.WQ, params.WK)
    return sum(jnp.sum(v**2) for v in weights)


def pl_loss(params: FactoredParams | SoftmaxParams, s) -> jax.Array:
    """Exact all-site pseudo-likelihood loss l_PL (§4)."""
    return pseudo_nll(fa_logits(params, s), s)


def mlm_loss(params: FactoredParams | SoftmaxParams, s, positions) -> jax.Array:
    """One-mask MLM loss: mean over sequences of -log p(s_{m, i_m} | rest), ``positions`` (M,) (§4)."""
    z = fa_logits(params, s)  # masking is automatic (A_ii = 0)
    m = jnp.arange(z.shape[0])
    logp = jax.nn.log_softmax(z[m, positions], axis=-1)
    return -jnp.mean(logp[m, jnp.asarray(s)[m, positions]])


#: names of the stopping reasons of a fit; :func:`lbfgs` records ``"gradient"`` or ``"objective"`` (both
#: convergence), ``"stalled"`` or ``"max_iter"`` in :attr:`FitInfo.reason`
STOP_REASONS = ("gradient", "objective", "stalled", "max_iter")


class FitInfo(NamedTuple):
    """How an L-BFGS fit ended (:func:`lbfgs`): final objective and gradient norm, iterations, whether it
    converged and why it stopped (one of :data:`STOP_REASONS`)."""

    loss: float  # final regularised training objective
    grad_norm: float  # final gradient norm
    iterations: int
    converged: bool  # stopped on the gradient tolerance or on the relative decrease of the objective
    reason: str = ""  # "gradient" | "objective" | "stalled" (a step that moved nothing) | "max_iter"
    rel_decrease: float = float("nan")  # relative decrease of the objective at the last iteration


#: where the jitted L-BFGS loop reports (iteration, objective, gradient norm) every
#: :data:`PROGRESS_EVERY` iterations; set by :func:`lbfgs` for the duration of one call
_progress_sink = [None]
PROGRESS_EVERY = 10


def _emit(it, value, gn):
    if _progress_sink[0] is not None:
        _progress_sink[0](int(it), float(value), float(gn))


@functools.lru_cache(maxsize=64)
def _lbfgs_runner(objective, patience, memory):
    """The jitted L-BFGS loop, built once per objective: a fit at another lambda, tolerance, iteration
    budget or data set of the same shapes reuses the compiled code (the settings are traced
    arguments; a fresh closure per call recompiled every fit)."""
    opt = optax.lbfgs(memory_size=memory)

    @jax.jit
    def run(params, max_iter, tol, rtol, *args):
        f = lambda p: objective(p, *args)  # noqa: E731
        vg = optax.value_and_grad_from_state(f)

        def step(carry):
            p, st, _, it, f_prev, n_small, _, _ = carry
            value, grad = vg(p, state=st)
            upd, st = opt.update(grad, st, p, value=value, grad=grad, value_fn=f)
            rel = (f_prev - value) / jnp.maximum(jnp.abs(value), 1.0)
            n_small = jnp.where(rel <= rtol, n_small + 1, 0)
            moved = optax.tree.norm(upd) > 0
            jax.lax.cond(
                it % PROGRESS_EVERY == 0,
                lambda: jax.debug.callback(_emit, it, value, optax.tree.norm(grad)),
                lambda: None,
            )
            return optax.apply_updates(p, upd), st, optax.tree.norm(grad), it + 1, value, n_small, rel, moved

        def cond(carry):
            _, _, gn, it, _, n_small, _, moved = carry
            return (it < max_iter) & (gn > tol) & (n_small < patience) & moved

        init = (
            params,
            opt.init(params),
            jnp.asarray(jnp.inf),
            jnp.asarray(0),
            jnp.asarray(jnp.inf),
            jnp.asarray(0),
            jnp.asarray(jnp.inf),
            jnp.asarray(True),
        )
        p, _, gn_last, it, _, n_small, rel, moved = jax.lax.while_loop(cond, step, init)
        value, grad = jax.value_and_grad(f)(p)
        return p, value, optax.tree.norm(grad), it, n_small, rel, moved, gn_last

    return run


def lbfgs(
    objective,
    params,
    *args,
    max_iter: int = 2000,
    tol: float = 1e-6,
    rtol: float = 1e-9,
    patience: int = 3,
    memory: int = 20,
    progress=None,
):
    """Minimise ``objective(params, *args)`` with optax L-BFGS (zoom line search).

    Stopping rule: the gradient norm <= ``tol`` (reason ``"gradient"``), or the
    relative decrease ``(f_{k-1} - f_k) / max(|f_k|, 1) <= rtol`` on ``patience`` consecutive
    iterations (``"objective"``); both are convergence.  A step that changes no parameter
    (``"stalled"``, a failed line search) and ``max_iter`` are not.  The reason, the final
    gradient norm and the last relative decrease are reported in :class:`FitInfo`.  Data travel as
    arguments (not constants) so XLA does not constant-fold them.  ``progress(iteration, objective,
    gradient norm)`` is called every :data:`PROGRESS_EVERY` iterations from inside the compiled loop."""
    nonnegative_int(max_iter, "max_iter")
    require(tol >= 0 and rtol >= 0, "tol", f"tolerances must be >= 0, got tol={tol}, rtol={rtol}")
    positive(patience, "patience", integer=True)
    run = _lbfgs_runner(objective, int(patience), int(memory))
    _progress_sink[0] = progress
    try:
        p, value, gn, it, n_small, rel, moved, gn_last = run(
            params, jnp.asarray(max_iter), jnp.asarray(tol, float), jnp.asarray(rtol, float), *args
        )
        jax.block_until_ready(p)
        jax.effects_barrier()
    finally:
        _progress_sink[0] = None
    gn = float(gn)
    if gn <= tol or float(gn_last) <= tol:
        reason = "gradient"
    elif int(n_small) >= patience:
        reason = "objective"
    elif not bool(moved):
        reason = "stalled"
    else:
        reason = "max_iter"
    return p, FitInfo(float(value), gn, int(it), reason in ("gradient", "objective"), reason, float(rel))


#: Default L2 weight on the per-site fields ``b`` (project choice, docs/potts_choices.md "Field penalty").
#: Without it the PL optimum does not exist when a colour never occurs at a site in the training data
#: (its field runs to -inf: 193 of 400 (site, colour) pairs at D ~ 0.3, M = 1000), the fit crawls for
#: thousands of iterations and the couplings absorb the damage.  The value was chosen on validation PL
#: (examples/potts_field_penalty.py, table ``potts_field_penalty`` in docs/potts_results.md).
LAM_FIELDS = 1e-5


def field_penalty(params: FactoredParams | SoftmaxParams) -> jax.Array:
    """Sum of squared fields ``b`` (0 for a model without fields), weighted by ``lam_fields`` in the fits."""
    b = as_params(params).b
    return jnp.sum(b**2) if b is not None else jnp.zeros(())


def _penalties(p, lam, lam_b, lam_J, K=None):
    pen = lam * fa_penalty(p) + lam_b * field_penalty(p)
    K = fa_couplings(p) if K is None else K
    return pen + lam_J * jnp.sum((K * (1.0 - jnp.eye(K.shape[0], dtype=K.dtype))[:, :, None, None]) ** 2)


def _fa_objective(p, sb, wb, lam, lam_b, lam_J):
    """Head-by-head route: weighted blocked PL + penalties."""
    return blocked_pl(lambda s: fa_logits(p, s), sb, wb) + _penalties(p, lam, lam_b, lam_J)


def _fa_objective_couplings(p, sb, wb, lam, lam_b, lam_J):
    """Coupling route (docs/potts_proteins.md §4): K = sum_h A^h (x) V^h formed once per evaluation, the
    logits of every block one dense product; the same value as :func:`_fa_objective`."""
    K = fa_couplings(p)
    Km = coupling_matrix(K)
    return blocked_pl(lambda s: coupling_logits(Km, s, p.b), sb, wb) + _penalties(p, lam, lam_b, lam_J, K)


def fit_lbfgs(
    key,
    s,
    cfg: FAConfig,
    lam: float = 1e-4,
    *,
    max_iter: int = 3000,
    tol: float = 1e-6,
    rtol: float = 1e-9,
    params=None,
    lam_fields: float = LAM_FIELDS,
    lam_J: float = 0.0,
    weights=None,
    dtype=None,
    progress=None,
    route: str | None = None,
    memory: int = 20,
):
    """Full-batch L-BFGS on l_PL + lam * ||weights||^2 + lam_fields * ||b||^2 + lam_J * ||K||^2 (= MLM in
    expectation, §4); returns (params, FitInfo), the parameters a record of ``cfg.kind``.

    ``params``: a warm start of the same kind (e.g. the fit at a neighbouring lambda); its absent fields
    (a bias added to a fit without one) are taken from the default initialisation, and a bias it has is
    dropped when ``cfg`` has none.  ``lam_fields`` only acts
    on a model with fields (``cfg.bias``).  ``lam_J``: L2 weight on the effective couplings K (the
    plmDCA penalty, docs/potts_proteins.md §4).  ``weights`` (M,): sequence weights of the PL
    (:func:`bayes_attn.families.sequence_weights`; default all 1).  ``dtype``: float precision of the fit
    (default float64; protein fits use float32).  ``route``: ``"heads"`` or ``"couplings"`` (default: by cost,
    :func:`use_coupling_route`)."""
    s = np.asarray(s)
    require(s.ndim == 2 and s.shape[1] == cfg.L, "sequences", f"must have L={cfg.L} columns, got shape {s.shape}")
    for name, v in (("lam", lam), ("lam_fields", lam_fields), ("lam_J", lam_J)):
        require(bool(np.isfinite(v)) and v >= 0, name, f"must be >= 0, got {v}")
    dt = jnp.dtype(dtype or jnp.float64)
    p0 = fa_init(key, cfg)
    if params is not None:
        params = as_params(params)
        require(type(params) is type(p0), "params", f"a warm start of {type(params).__name__} for a {cfg.kind!r} model")
        p0 = type(p0)(*(None if v is None else v if w is None else jnp.asarray(w) for v, w in zip(p0, params)))
    p0 = jax.tree.map(lambda x: jnp.asarray(x, dt), p0)
    route = route or ("couplings" if use_coupling_route(cfg.heads, cfg.C) else "heads")
    one_of(route, ("heads", "couplings"), "route")
    sb, wb = to_blocks(s, weights, C=cfg.C, dtype=dt)
    obj = _fa_objective_couplings if route == "couplings" else _fa_objective
    return lbfgs(
        obj,
        p0,
        sb,
        wb,
        jnp.asarray(lam, dt),
        jnp.asarray(lam_fields, dt),
        jnp.asarray(lam_J, dt),
        max_iter=max_iter,
        tol=tol,
        rtol=rtol,
        progress=progress,
        memory=memory,
    )


def fit_adam_mlm(
    key,
    s,
    cfg: FAConfig,
    lam: float = 1e-4,
    *,
    steps: int = 5000,
    batch: int = 256,
    lr: float = 1e-2,
    params=None,
    lam_fields: float = LAM_FIELDS,
):
    """MLM-faithful training: Adam on random minibatches, one uniformly masked site per sequence (§4); the
    same penalties as :func:`fit_lbfgs`."""
    s = jnp.asarray(s)
    positive(steps, "steps", integer=True)
    positive(batch, "batch", integer=True)
    k0, key = jax.random.split(key)
    params = fa_init(k0, cfg) if params is None else as_params(params)
    sched = optax.cosine_decay_schedule(lr, steps, alpha=0.01)
    opt = optax.adam(sched)
    M, L = s.shape
    obj = lambda p, sb, pos: mlm_loss(p, sb, pos) + lam * fa_penalty(p) + lam_fields * field_penalty(p)  # noqa: E731

    def step(carry, k):
        p, st = carry
        k1, k2 = jax.random.split(k)
        idx = jax.random.randint(k1, (min(batch, M),), 0, M)
        pos = jax.random.randint(k2, (idx.size,), 0, L)
        val, g = jax.value_and_grad(obj)(p, s[idx], pos)
        upd, st = opt.update(g, st, p)
        return (optax.apply_updates(p, upd), st), val

    (params, _), losses = jax.jit(lambda p, ks: jax.lax.scan(step, (p, opt.init(p)), ks))(
        params, jax.random.split(key, steps)
    )
    return params, np.asarray(losses)


__all__ = [
    "KINDS",
    "FAConfig",
    "fa_init",
    "fa_attention",
    "fa_logits",
    "fa_couplings",
    "fa_penalty",
    "field_penalty",
    "LAM_FIELDS",
    "pl_loss",
    "mlm_loss",
    "FitInfo",
    "STOP_REASONS",
    "lbfgs",
    "fit_lbfgs",
    "fit_adam_mlm",
]
