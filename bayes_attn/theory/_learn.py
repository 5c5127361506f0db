"""Attention learned by maximising the evidence (type-II maximum likelihood; docs/evidence.md §5).

The attention parameters ``theta`` of every head -- w-style ``W`` (docs/theory.md eq. (2.2b)) or qk-style
``Q, K`` of the rank ``d_qk`` they start with (eq. (2.2c)) -- are hyperparameters of the Bayesian network.
The chain ``theta -> scores -> softmax over keys (2.2a) -> path attention (2.4a) -> Phi (4.1b) -> K_U (4.2a)
-> action (4.4c)`` is differentiable, so the evidence can be climbed with optax:

* ``exact=False`` *(default)*: objective the saddle-point log evidence (docs/evidence.md eq. (E1)); gradient
  the envelope gradient of its leading term ``-A(U*)/2`` (eq. (E3)), exact for that term; the O(1) terms of
  (E1) are recorded but not differentiated *(project choice: their gradient needs third derivatives of
  the action, and they are O(1/N) relative to the leading term)*;
* ``exact=True``: objective the exact finite-N evidence (importance sampling, eq. (E2)); gradient by
  Fisher's identity (eq. (E4)); a stochastic gradient (fresh draws every step).

``basis = B`` *(optional; project choice, docs/evidence.md §5)*: an ``(n0, m)`` matrix of full column rank
whose columns are the token directions (with their units) that the attention may read: ``Q = Q' B^T``,
``K = K' B^T`` (qk-style) or ``W = B W' B^T`` (w-style); the coordinates ``Q', K', W'`` are what is learned,
starting from the least-squares coordinates of the start (``Q B^{+T}``, ``B^+ W B^{+T}``, so an orthonormal
``B`` projects the start on its span).  The learned heads are written back in the full token space, so a
bundle needs no basis.

``prior_scale = sigma`` *(optional; project choice, docs/evidence.md §5)*: a Gaussian hyperprior
``theta ~ N(0, sigma^2 I)`` on every attention parameter, so that the criterion is the log posterior of
``theta`` up to a constant, ``ln Z(theta) - |theta|^2 / (2 sigma^2)`` (type-II MAP, eq. (E5)), and its
gradient is the evidence gradient minus ``theta / sigma^2``.  ``theta = 0`` is uniform attention.

Every step re-solves ``U*`` warm-started at the previous step's.  The parameters of the best objective seen
(the evidence, plus the log hyperprior when there is one) are kept (they are what is written); a non-finite value or gradient, or a failed saddle-point solve, stops
the optimisation with a message (``FitResult.message``) and keeps the best so far.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import InputError, positive, require
from ..network import (
    HeadLayer,
    path_inputs,
    phi as make_phi,
    pool,
    pooled_qk_attention,
    propagate_paths,
    qk_scores,
    softmax_keys,
    w_scores,
)
from ._evidence import exact_log_evidence, fisher_attention_grad, saddle_attention_grad, saddle_log_evidence
from ._predictor import predict
from ._solver import TheoryWarning, solve


def attention_params(task) -> list[dict]:
    """The learnable attention parameters of ``task``: per layer ``{"W"}`` or ``{"Q", "K"}`` (float64 arrays).

    User-supplied attention arrays (``HeadLayer.fixed``) and hardmax heads have no differentiable
    parameters: :class:`InputError`.
    """
    out = []
    for l, layer in enumerate(task.layers, start=1):
        if layer.style == "fixed":
            raise InputError(
                f"data.attention_train_{l}: layer {l} has user-supplied attention arrays, which have no "
                f"parameters to learn; give w-style W_{l} or qk-style Q_{l}/K_{l} instead"
            )
        if layer.hard:
            raise InputError(f"attention.hard: layer {l} uses hardmax attention, which is not differentiable")
        keys = ("W",) if layer.style == "w" else ("Q", "K")
        out.append({k: jnp.asarray(layer.params[k], dtype=jnp.float64) for k in keys})
    return out


def attention_matrices(params, x) -> list:
    """Softmax attention ``(P, H_l, S, S)`` of every layer (eqs. (2.2a)–(2.2c)) from the parameters."""
    return [softmax_keys(w_scores(x, p["W"]) if "W" in p else qk_scores(x, p["Q"], p["K"])) for p in params]


def phi_of(params, x, readout: str, sigma2_input):
    """``Phi`` (docs/theory.md eq. (4.1b)) as a differentiable function of the attention parameters.

    The same as ``path_attention(attention_matrices(params, x), readout)`` propagated to the inputs, but a qk-style
    last layer forms only the query its readout reads (:func:`~bayes_attn.network.pooled_qk_attention`).
    """
    *lower, top = params
    if "Q" in top:
        v = pooled_qk_attention(x, top["Q"], top["K"], readout)
    else:
        v = pool(softmax_keys(w_scores(x, top["W"])), readout)
    return make_phi(path_inputs(x, propagate_paths(v, attention_matrices(lower, x))), sigma2_input)


@partial(jax.jit, static_argnames=("readout",))
def _phi_in_basis(params, basis, x, readout: str, sigma2_input):
    """:func:`phi_of` at the parameters given in ``basis`` coordinates (:func:`_expand`; ``None``: the full space),
    compiled: the fit calls it, and differentiates it, at every step (op by op, its first step alone compiled some
    two hundred small programs)."""
    return phi_of(_expand(params, basis), x, readout, sigma2_input)


def with_attention(task, params, name: str | None = None):
    """A copy of ``task`` whose attention layers carry ``params`` (head names kept)."""
    from ..tasks import Task

    layers = []
    for layer, p in zip(task.layers, params):
        if "W" in p:
            layers.append(HeadLayer.w(np.asarray(p["W"]), 1.0, layer.names))
        else:
            layers.append(HeadLayer.qk(np.asarray(p["Q"]), np.asarray(p["K"]), layer.names))
    return Task(
        task.x_train,
        task.y_train,
        task.x_test,
        task.y_test,
        tuple(layers),
        name=name or task.name,
        meta=dict(task.meta),
    )


def theory_accuracy(params, spec, task, U, x_eval, y_eval) -> float:
    """Accuracy of the sign of the theory's predictor (eq. (4.2b)) at ``U`` on ``(x_eval, y_eval)``."""
    xtr = jnp.asarray(task.x_train)
    ph_tr = _phi_in_basis(params, None, xtr, spec.readout, spec.sigma2_input)
    ph_ev = _phi_in_basis(params, None, jnp.asarray(x_eval), spec.readout, spec.sigma2_input)
    m, _ = predict(U, ph_tr, ph_ev, jnp.asarray(task.y_train), spec.temperature)
    return float(np.mean(np.sign(np.asarray(m)) == np.asarray(y_eval)))


class FitResult(NamedTuple):
    """The result of :func:`fit_attention`: the attention parameters of the best objective, one history entry per
    step, the step they come from, a message and whether the fit stopped early on a failed solve or a non-finite
    value, and ``U*_1`` at those parameters."""

    params: list  # parameters of the best evidence
    history: list  # one dict per step (log_evidence, leading term, gradient norm, accuracies)
    best_step: int
    message: str
    diverged: bool
    U: object  # U*_1 at the best parameters


def _norm(tree) -> float:
    return float(jnp.sqrt(sum(jnp.sum(v * v) for v in jax.tree_util.tree_leaves(tree))))


def _reduce(params, basis):
    """Least-squares coordinates of the parameters in ``basis`` (inverse of :func:`_expand` on its span)."""
    if basis is None:
        return params
    pinv = jnp.linalg.pinv(basis)  # (m, n0)
    return [{k: (v @ pinv.T if k in ("Q", "K") else pinv @ v @ pinv.T) for k, v in p.items()} for p in params]


def _expand(params, basis):
    """Parameters in the full token space from their coordinates in ``basis``."""
    if basis is None:
        return params
    return [{k: (v @ basis.T if k in ("Q", "K") else basis @ v @ basis.T) for k, v in p.items()} for p in params]


def check_basis(basis, n0: int):
    """``basis`` as a float64 array after checking it is ``(n0, m)`` with ``m >= 1`` and full column rank
    (:class:`InputError` naming ``basis`` otherwise)."""
    B = np.asarray(basis, dtype=float)
    ok = B.ndim == 2 and B.shape[0] == n0 and B.shape[1] >= 1 and int(np.linalg.matrix_rank(B)) == B.shape[1]
    require(ok, "basis", f"must be a ({n0}, m) matrix of full column rank m >= 1, got shape {B.shape}")
    return jnp.asarray(B, dtype=jnp.float64)


def check_fit_settings(
    *, steps: int = 100, lr: float = 0.01, n_pairs: int = 500, eval_every: int = 10, prior_scale: float | None = None
) -> None:
    """The checks :func:`fit_attention` makes on its settings (an :class:`InputError` naming the parameter), for
    callers that want them before any work (the command line, under its flag names)."""
    positive(steps, "steps", integer=True)
    positive(lr, "lr")
    positive(n_pairs, "n_pairs", integer=True)
    positive(eval_every, "eval_every", integer=True)
    if prior_scale is not None:
        positive(prior_scale, "prior_scale")


def project_attention(params, basis):
    """The heads a fit with ``basis`` starts from: ``params`` replaced by their least-squares fit in span(basis)
    (identity for ``basis=None``)."""
    if basis is None:
        return params
    basis = jnp.asarray(basis, dtype=jnp.float64)
    return _expand(_reduce(params, basis), basis)


def log_hyperprior(params, prior_scale: float | None) -> float:
    """``-|theta|^2 / (2 sigma^2)``: the Gaussian hyperprior's log density up to its constant (eq. (E5)); 0 without one."""
    if prior_scale is None:
        return 0.0
    return -0.5 * _norm(params) ** 2 / prior_scale**2


def fit_attention(
    task,
    spec,
    *,
    steps: int = 100,
    lr: float = 0.01,
    exact: bool = False,
    n_pairs: int = 500,
    val: tuple | None = None,
    eval_every: int = 10,
    seed: int = 0,
    progress: bool = False,
    callback: Callable | None = None,
    prior_scale: float | None = None,
    basis=None,
) -> FitResult:
    """Maximise the log evidence over the attention parameters of every head with ``optax.adam(lr)``.

    ``val``: optional ``(x_val, y_val)`` whose theory accuracy is recorded every ``eval_every`` steps (and at the
    last); it is monitored, not used for selection (the evidence is the criterion).  History entries hold
    ``log_evidence`` (eq. (E1), or the exact value with ``exact``), ``leading`` (``-A(U*)/2``), ``grad_norm``,
    ``val_accuracy`` (or None), ``log_prior`` and ``objective`` (``log_evidence + log_prior``: what is maximised
    and what selects the kept parameters).  ``prior_scale``: the hyperprior of the module docstring (None: plain
    type-II maximum likelihood; with ``basis`` the prior is on the coordinates).  ``basis``: the restriction of
    the module docstring (None: every token direction).  ``callback(step, entry)`` is called after every step.
    """
    import optax

    check_fit_settings(steps=steps, lr=lr, n_pairs=n_pairs, eval_every=eval_every, prior_scale=prior_scale)
    full0 = attention_params(task)
    if basis is not None:
        basis = check_basis(basis, task.x_train.shape[-1])
    params = _reduce(full0, basis)
    if exact:
        from ._exact import check_widths

        check_widths(spec)
    x, y = jnp.asarray(task.x_train), jnp.asarray(task.y_train)
    phi_fn = lambda p: _phi_in_basis(p, basis, x, spec.readout, spec.sigma2_input)  # noqa: E731
    opt = optax.adam(lr)

    @jax.jit
    def ascend(grad, state, params):  # one Adam step up the objective, compiled once per fit
        updates, state = opt.update(jax.tree_util.tree_map(lambda g: -g, grad), state, params)
        return optax.apply_updates(params, updates), state

    state = opt.init(params)
    history, best, best_val, best_step, init, msg, diverged, best_U = [], None, -np.inf, -1, None, "", False, None
    it = range(steps + 1)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="fit-attention")
    for step in it:
        phi = phi_fn(params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TheoryWarning)
            sol = solve(spec, phi, y, init=init)
        if not sol.status.ok:
            msg, diverged = f"stopped at step {step}: saddle-point solve failed ({sol.status.message})", True
            break
        init = sol.Us
        sad = saddle_log_evidence(spec, phi, y, solution=sol)
        if exact:
            ex = exact_log_evidence(None, spec, n_pairs=n_pairs, seed=seed + step, solution=sol, phi=phi, y=y)
            value, mcse = ex.log_evidence, ex.mcse
            grad = fisher_attention_grad(phi_fn, params, spec, y, ex) if step < steps else None
        else:
            value, mcse = sad.log_evidence, 0.0
            grad = saddle_attention_grad(phi_fn, params, spec, y, sol) if step < steps else None
        log_prior = log_hyperprior(params, prior_scale)
        if grad is not None and prior_scale is not None:
            grad = jax.tree_util.tree_map(lambda g, p: g - p / prior_scale**2, grad, params)
        objective = float(value) + log_prior
        gnorm = _norm(grad) if grad is not None else float("nan")
        entry = {
            "step": step,
            "log_evidence": float(value),
            "log_evidence_mcse": float(mcse),
            "log_prior": log_prior,
            "objective": objective,
            "leading": float(sad.action_term),
            "log_evidence_saddle": float(sad.log_evidence),
            "grad_norm": gnorm,
            "val_accuracy": None,
        }
        if val is not None and (step % eval_every == 0 or step == steps):
            entry["val_accuracy"] = theory_accuracy(_expand(params, basis), spec, task, sol.U, *val)
        history.append(entry)
        if callback is not None:
            callback(step, entry)
        if not np.isfinite(objective) or (grad is not None and not np.isfinite(gnorm)):
            msg, diverged = f"stopped at step {step}: non-finite log evidence or gradient", True
            break
        if objective > best_val:
            best, best_val, best_step, best_U = params, objective, step, sol.U
        if grad is None:
            break
        params, state = ascend(grad, state, params)
    if best is None:
        raise InputError(f"fit-attention: {msg or 'no finite evidence at the starting attention'}")
    if not msg:
        msg = f"completed {steps} steps"
    return FitResult(_expand(best, basis), history, best_step, msg, diverged, best_U)


__all__ = [
    "attention_params",
    "attention_matrices",
    "phi_of",
    "with_attention",
    "theory_accuracy",
    "FitResult",
    "fit_attention",
    "log_hyperprior",
    "project_attention",
    "check_basis",
    "check_fit_settings",
]
