"""Exact blocked Gibbs sampler for the full network (docs/theory.md §2.4, §3, §5.1).

Given all other weights, ``f`` is linear in each block ``B`` of non-centred weights (``z_V0``,
``z_V1``, .., ``z_VL``, ``z_a``): ``f(x^mu) = (J_B z_B)_mu``.  With the standard-normal prior and
``y ~ N(f, T)`` the conditional is Gaussian and is drawn exactly by the prior-plus-correction
(Matheron) update::

    z0 ~ N(0, I),  eps ~ N(0, T I_P)
    z_B = z0 + J_B^T (G_B + T I)^{-1} (y - J_B z0 - eps),      G_B = J_B J_B^T   (P x P)

``J_B z0`` is a forward pass, ``J_B^T alpha`` one vector-Jacobian product, ``G_B`` is built from the
path structure below and costs ``O(P^2 n_pi N)``: no ``D x D`` matrix is ever formed.

**Path representation** (:mod:`bayes_attn.network`: :func:`~bayes_attn.network.project_input`,
:func:`~bayes_attn.network.apply_layer`, :func:`~bayes_attn.network.backward_vectors`).  With
``Z_l[mu, pi]`` every path propagated separately and ``b^(l)_pi`` the per-path backward vectors,
``df/dV^(l,h) = sum_{pi: h_l = h} b^(l+1)_pi Z_{l-1}[pi]^T / sqrt(H_l N_l)`` has rank <= ``p_{l+1}``
per example.  Hence (z-coordinates, ``V = sigma z``)::

    G_l[mu, nu] = sigma_l^2 / (H_l N_l) sum_{pi, pi'} M_l[pi, pi'] Z_{l-1}[mu, pi] . Z_{l-1}[nu, pi']
    M_l = (b^(l+1) b^(l+1)T) * 1[h_l(pi) = h_l(pi')]

For ``V0`` this is the renormalised kernel ``K_{U_1(W)}`` with ``U_1 = n_pi b^(1) b^(1)T``
(docs/theory.md eqs. (4.2a), (4.3c)); for the readout ``G_a = sigma_a^2 Xbar Xbar^T / N_a`` with
``Xbar = sum_pi Z_L[pi]``.  After the sweep, exact scale moves along the ridges
``(z_A, z_B) -> (c z_A, z_B / c)`` of adjacent blocks (which leave ``f`` unchanged) speed up mixing.

**Collapsed model.**  With ``V0`` integrated out, ``U_1(W)`` is *quadratic* in every block of ``W``:
no conditional is Gaussian, so exact Gibbs does not exist there.  On ``model = "collapsed"`` this
sampler runs the full-model sweep (its ``W``-marginal is exactly the collapsed posterior) and stores
the collapsed model's Rao–Blackwellised predictions ``m_W, v_W`` (eq. (5.1c)).  docs/samplers.md.

Stats: ``acceptance_rate`` = fraction of accepted scale moves (the block draws are exact);
``diverging`` = a Cholesky factor of ``G_B + T I`` was not finite; ``n_steps`` = ``P x P`` Gram
solves (``L + 2`` per sweep).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ...linalg import apply_kernel, shifted_cholesky
from ...network import apply_layer, backward_vectors, head_membership, path_forward, project_input
from ..models import weight_shapes
from ._adapt import std_normal
from ._base import Program, Settings


class State(NamedTuple):
    """``position``: dict of standard-normal sites (``z_V0``, ``z_V1``.., ``z_a``);
    ``logdensity``: full-model log posterior (up to a constant) after the sweep."""

    position: dict
    logdensity: jnp.ndarray


class Info(NamedTuple):
    """``is_divergent``: a Cholesky factor of ``G_B + T I`` was not finite;
    ``n_solves``: ``P x P`` Gram builds and solves in the sweep (``L + 2``);
    ``scale_accept``: fraction of accepted scale moves."""

    is_divergent: jnp.ndarray
    n_solves: jnp.ndarray
    scale_accept: jnp.ndarray


def same_head_mask(heads, l: int):
    """``1[h_l(pi) = h_l(pi')]`` (0-based layer ``l``), ``(n_pi, n_pi)``."""
    h = head_membership(heads)[:, l]
    return (h[:, None] == h[None, :]).astype(float)


def block_gram(Z, M, scale):
    """``G[mu, nu] = scale sum_{pi pi'} M[pi, pi'] Z[mu, pi] . Z[nu, pi']``  (``P x P``)."""
    return scale * jnp.einsum("mqi,nqi->mn", jnp.einsum("mpi,pq->mqi", Z, M), Z)


def layer_gram(heads, l: int, sigma2, Z, b):
    """Gram ``J J^T`` of the block ``z_V{l+1}`` (0-based ``l``), z-coordinates."""
    M = (b @ b.T) * same_head_mask(heads, l)
    return block_gram(Z, M, sigma2 / (heads[l] * Z.shape[2]))


def readout_gram(sigma2, Z):
    """Gram of ``z_a``: ``sigma_a^2 Xbar Xbar^T / N_a``."""
    xbar = Z.sum(axis=1)
    return sigma2 * (xbar @ xbar.T) / Z.shape[2]


def matheron_update(z0, eps, lin, G, y, T):
    """The prior-plus-correction update of a prior draw ``z0 ~ N(0, I)`` with noise ``eps ~ N(0, T I)``:
    ``z0 + J^T (G + T I)^{-1} (y - lin(z0) - eps)``, ``G = J J^T``.  Returns ``(z, ok)``; ``ok`` is false when the
    Cholesky factor of ``G + T I`` failed."""
    f0, vjp = jax.vjp(lin, z0)
    Lc, ok = shifted_cholesky(G, T)
    alpha = jsl.cho_solve((Lc, True), y - f0 - eps)
    return z0 + vjp(alpha)[0], ok


def matheron(rng_key, lin, z_shape, G, y, T):
    """Exact draw of ``z ~ N(0, I)`` conditioned on ``y ~ N(lin(z), T I)``, ``G = J J^T``: :func:`matheron_update`
    of fresh noise.  Returns ``(z, ok)``; ``ok`` is false when the Cholesky of ``G + T I`` failed."""
    k_z, k_e = jax.random.split(rng_key)
    z0 = std_normal(k_z, z_shape, y.dtype)
    eps = jnp.sqrt(T) * std_normal(k_e, y.shape, y.dtype)
    return matheron_update(z0, eps, lin, G, y, T)


def scale_move(rng_key, zA, zB):
    """Exact group move along the scale ridge ``(z_A, z_B) -> (c z_A, z_B / c)`` of two adjacent blocks, which
    leaves ``f`` (and the likelihood) unchanged: :func:`scale_move_update` of a fresh standard normal and uniform.
    Returns ``(z_A, z_B, accepted)``."""
    k_u, k_acc = jax.random.split(rng_key)
    xi = jax.random.normal(k_u, (), zA.dtype)
    return scale_move_update(xi, jax.random.uniform(k_acc, (), zA.dtype), zA, zB)


def scale_move_update(xi, unif, zA, zB):
    """The scale move of :func:`scale_move` given its standard normal ``xi`` and uniform ``unif``.

    Liu & Sabatti (2000): draw ``c`` from ``p(g(theta)) |J_g| dc / c``; in ``u = log c^2`` this is
    ``exp(p u - (a e^u + b e^-u) / 2)`` with ``a = |z_A|^2``, ``b = |z_B|^2``,
    ``p = (dim A - dim B) / 2`` (a log-GIG law).  One independence Metropolis step from ``u = 0``
    with a Gaussian proposal ``u = mode + sd xi`` at its mode and curvature keeps that conditional
    invariant, hence the posterior.  Returns ``(z_A, z_B, accepted)``.
    """
    a, b = jnp.sum(zA * zA), jnp.sum(zB * zB)
    p = 0.5 * (zA.size - zB.size)
    log_t = lambda u: p * u - 0.5 * (a * jnp.exp(u) + b * jnp.exp(-u))  # noqa: E731
    mode = jnp.log((p + jnp.sqrt(p * p + a * b)) / a)
    sd = 1.0 / jnp.sqrt(0.5 * (a * jnp.exp(mode) + b * jnp.exp(-mode)))
    log_q = lambda u: -0.5 * ((u - mode) / sd) ** 2  # noqa: E731
    u = mode + sd * xi
    log_ratio = log_t(u) - log_t(0.0) + log_q(0.0) - log_q(u)
    ok = jnp.log(unif) < log_ratio
    c = jnp.where(ok, jnp.exp(0.5 * u), 1.0)
    return zA * c, zB / c, ok


def sweep_noise(rng_key, shapes: dict, n_obs: int, n_moves: int, dtype):
    """Every random number of one sweep from **one** normal and one uniform call: per block (in ``shapes``' order)
    its prior draw ``z0`` and ``n_obs`` standard normals for its ``eps``, then one normal per scale move; and
    ``n_moves`` uniforms.  Returns ``([(z0, xi_eps) per block], move_normals, move_uniforms)``.

    *(project choice)* One call of each kind instead of about twenty: every ``jax.random`` call is a threefry
    hash that XLA compiles on its own (about 0.3 s each at its default optimisation level; docs/design.md,
    "Profile and floor").  The numbers are as independent as before; only which bits feed which block changed.
    """
    k_n, k_u = jax.random.split(rng_key)
    sizes = [math.prod(s) + n_obs for s in shapes.values()]
    flat = std_normal(k_n, (sum(sizes) + n_moves,), dtype)
    blocks, start = [], 0
    for s, size in zip(shapes.values(), sizes):
        piece = flat[start : start + size]
        blocks.append((piece[: size - n_obs].reshape(s), piece[size - n_obs :]))
        start += size
    return blocks, flat[start:], jax.random.uniform(k_u, (n_moves,), dtype)


def log_density(T, f, y, position):
    """Full-model log posterior in z-coordinates, up to a constant (docs/theory.md eq. (3c))."""
    prior = sum(jnp.sum(v * v) for v in position.values())
    return -0.5 * jnp.sum((f - y) ** 2) / T - 0.5 * prior


def init(position, heads, args) -> State:
    s = jnp.sqrt(args.hyper.variances)
    values = [s[l + 1] * position[f"z_V{l + 1}"] for l in range(len(heads))]
    f = path_forward(heads, args.xpi_train, s[0] * position["z_V0"], values, s[-1] * position["z_a"])
    return State(position, log_density(args.hyper.temperature, f, args.y, position))


def build_kernel(heads, scale_moves: bool = True):
    """Return ``kernel(rng_key, state, args) -> (state, info)``: one systematic sweep ``V0, V1, .., VL, a``,
    each block drawn exactly from its conditional, then (``scale_moves``) one :func:`scale_move` per
    adjacent pair of blocks."""
    L, n_pi = len(heads), int(head_membership(heads).shape[0])

    def kernel(rng_key, state: State, args):
        s = jnp.sqrt(args.hyper.variances)
        T, y, xpi = args.hyper.temperature, args.y, args.xpi_train
        z = dict(state.position)
        names = ["z_V0"] + [f"z_V{l + 1}" for l in range(L)] + ["z_a"]
        noise, move_xi, move_u = sweep_noise(rng_key, {k: z[k].shape for k in names}, y.shape[0], L + 1, y.dtype)
        sqrt_T = jnp.sqrt(T)
        values = [s[l + 1] * z[f"z_V{l + 1}"] for l in range(L)]
        bs = backward_vectors(heads, values, s[-1] * z["z_a"])  # from the blocks above, fixed in this sweep
        # input projection: G = K_{U_1(W)}, U_1 = n_pi b1 b1^T
        b1 = bs[0]
        lin0 = lambda zz: jnp.einsum("pi,mip->m", b1 @ (s[0] * zz), xpi) / jnp.sqrt(xpi.shape[1])  # noqa: E731
        G0 = apply_kernel(args.kernels.train, n_pi * (b1 @ b1.T))
        z["z_V0"], ok = matheron_update(noise[0][0], sqrt_T * noise[0][1], lin0, G0, y, T)
        Z = project_input(s[0] * z["z_V0"], xpi)
        for l in range(L):
            b, Zin = bs[l + 1], Z

            def lin(zz, l=l, b=b, Zin=Zin):
                return jnp.einsum("mpj,pj->m", apply_layer(heads, l, s[l + 1] * zz, Zin), b)

            name = f"z_V{l + 1}"
            G = layer_gram(heads, l, args.hyper.variances[l + 1], Zin, b)
            z[name], okl = matheron_update(noise[l + 1][0], sqrt_T * noise[l + 1][1], lin, G, y, T)
            ok = ok & okl
            Z = apply_layer(heads, l, s[l + 1] * z[name], Zin)
        xbar = Z.sum(axis=1)
        lin_a = lambda zz: xbar @ (s[-1] * zz) / jnp.sqrt(xbar.shape[1])  # noqa: E731
        G_a = readout_gram(args.hyper.variances[-1], Z)
        z["z_a"], oka = matheron_update(noise[L + 1][0], sqrt_T * noise[L + 1][1], lin_a, G_a, y, T)
        ok = ok & oka
        f = lin_a(z["z_a"])
        n_acc = 0
        if scale_moves:  # f is invariant under each move, only the prior term changes
            for k in range(L + 1):
                z[names[k]], z[names[k + 1]], acc = scale_move_update(
                    move_xi[k], move_u[k], z[names[k]], z[names[k + 1]]
                )
                n_acc = n_acc + acc
        new = State(z, log_density(T, f, y, z))
        info = Info(
            ~ok | ~jnp.isfinite(new.logdensity),
            jnp.asarray(L + 2, jnp.int64),
            jnp.asarray(n_acc / (L + 1) if scale_moves else 1.0),
        )
        return new, info

    return kernel


def program(model, settings: Settings) -> Program:
    """Gibbs as a driver program: start from a prior draw of the full weights, no tuning (warm-up = burn-in)."""
    heads = model.heads
    kernel = build_kernel(heads)
    shapes = weight_shapes(heads, model.n0, model.widths, collapsed=False)

    def init_fn(key, args, position=None, inverse_mass_matrix=None):
        if position is None:
            keys = jax.random.split(key, len(shapes))
            position = {k: std_normal(kk, s) for kk, (k, s) in zip(keys, shapes.items())}
        return init(position, heads, args)

    def sample_step(key, state, args):
        state, info = kernel(key, state, args)
        return state, {
            "lp": state.logdensity,
            "acceptance_rate": info.scale_accept,
            "diverging": info.is_divergent,
            "n_steps": info.n_solves,
        }

    return Program(
        init_fn, sample_step, lambda k, s, a: s, lambda s, a: s.position, {"diverging": "any", "n_steps": "sum"}
    )


__all__ = [
    "State",
    "Info",
    "init",
    "build_kernel",
    "matheron",
    "matheron_update",
    "scale_move",
    "scale_move_update",
    "sweep_noise",
    "layer_gram",
    "readout_gram",
    "block_gram",
    "same_head_mask",
    "log_density",
    "program",
]
