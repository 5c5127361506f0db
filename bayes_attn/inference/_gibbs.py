"""Exact blocked Gibbs sampler for the full network (docs/theory.md §2.4, §3, §5.1).

Given all other weights, ``f`` is linear in each block ``B`` of non-centred weights
(``z_V0``, ``z_V1``, .., ``z_VL``, ``z_a``): ``f(x^mu) = (J_B z_B)_mu``.  With the standard-normal
prior and ``y ~ N(f, T)`` the conditional is Gaussian and is drawn exactly by the
prior-plus-correction (Matheron) update::

    z0 ~ N(0, I),  eps ~ N(0, T I_P)
    z_B = z0 + J_B^T (G_B + T I)^{-1} (y - J_B z0 - eps),      G_B = J_B J_B^T   (P x P)

``J_B z0`` is a forward pass, ``J_B^T alpha`` one vector-Jacobian product, ``G_B`` is built from
the path structure below and costs ``O(P^2 n_pi N)``: no ``D x D`` matrix is ever formed.

**Path representation.**  With ``Z_{-1}[mu, pi] = x^pi(x^mu)`` (``(P, n_pi, N_0)``) and
``Z_l[mu, pi] = V^(l, h_l(pi)) Z_{l-1}[mu, pi] / sqrt(H_l N_l)`` (``Z_0 = V0 x^pi / sqrt(N_0)``),
``f = sum_pi a . Z_L[pi] / sqrt(N_a)`` (the path identity of theory.md §2.4).  The backward
vectors ``b^(L+1)_pi = a / sqrt(N_a)``, ``b^(l)_pi = V^(l,h_l)^T b^(l+1)_pi / sqrt(H_l N_l)`` do not
depend on the input, and ``df/dV^(l,h) = sum_{pi: h_l = h} b^(l+1)_pi Z_{l-1}[pi]^T / sqrt(H_l N_l)``
has rank <= ``p_{l+1}`` per example.  Hence (z-coordinates, ``V = sigma z``)::

    G_l[mu, nu] = sigma_l^2 / (H_l N_l) sum_{pi, pi'} M_l[pi, pi'] Z_{l-1}[mu, pi] . Z_{l-1}[nu, pi']
    M_l = (b^(l+1) b^(l+1)T) * 1[h_l(pi) = h_l(pi')]

For ``V0`` this is the renormalised kernel ``K_{U_1(W)}`` with ``U_1 = n_pi b^(1) b^(1)T``
(theory.md §4.3, §5.1; computed with :func:`bayes_attn.network.kernel_fn`); for the readout
``G_a = sigma_a^2 Xbar Xbar^T / N_a`` with ``Xbar = sum_pi Z_L[pi]``.

**Collapsed model.**  With ``V0`` integrated out, ``y | W ~ N(0, K_{U_1(W)} + T I)`` and
``U_1(W)`` is *quadratic* in every block of ``W``: no conditional is Gaussian, so exact Gibbs
does not exist there.  ``collapsed = true`` therefore runs this full-model sampler (its
``W``-marginal is exactly the collapsed posterior) and stores the Rao–Blackwellised
predictions ``m_W, v_W`` of theory.md §5.1 (the collapsed ``derived``).  docs/samplers.md.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ..network import NetworkSpec, head_membership, kernel_fn
from ._adapt import std_normal


class GibbsState(NamedTuple):
    """``position``: dict of standard-normal sites (``z_V0``, ``z_V1``.., ``z_a``);
    ``logdensity``: full-model log posterior (up to a constant) after the sweep."""

    position: dict
    logdensity: jnp.ndarray


class GibbsInfo(NamedTuple):
    """``is_divergent``: a Cholesky factor of ``G_B + T I`` was not finite;
    ``n_solves``: number of ``P x P`` Gram builds and solves in the sweep (``L + 2``);
    ``scale_accept``: fraction of accepted scale moves."""

    is_divergent: jnp.ndarray
    n_solves: jnp.ndarray
    scale_accept: jnp.ndarray


class GibbsData(NamedTuple):
    """What a sweep closes over: ``xpi`` ``(P, N0, n_pi)``, ``y`` ``(P,)``, ``k_v0``: ``U -> K_U``
    on the training inputs."""

    xpi: jnp.ndarray
    y: jnp.ndarray
    k_v0: object


def _layer_view(spec: NetworkSpec, l: int):
    """``(n_prefix, H_l, n_suffix)`` for 0-based layer ``l`` (paths: ``h_1`` most significant)."""
    H = spec.heads
    return int(np.prod(H[:l], dtype=int)), H[l], int(np.prod(H[l + 1:], dtype=int))


def apply_layer(spec: NetworkSpec, l: int, V, Z):
    """``Z_l[mu, pi] = V^(l, h_l(pi)) Z_{l-1}[mu, pi] / sqrt(H_l N_l)``; ``Z``: ``(P, n_pi, N_l)``."""
    pre, H, suf = _layer_view(spec, l)
    P = Z.shape[0]
    out = jnp.einsum("hji,mahbi->mahbj", V, Z.reshape(P, pre, H, suf, -1))
    return out.reshape(P, pre * H * suf, -1) / jnp.sqrt(H * V.shape[2])


def backward_layer(spec: NetworkSpec, l: int, V, b):
    """``b^(l)_pi = V^(l, h_l(pi))^T b^(l+1)_pi / sqrt(H_l N_l)``; ``b``: ``(n_pi, N_{l+1})``."""
    pre, H, suf = _layer_view(spec, l)
    out = jnp.einsum("hji,ahbj->ahbi", V, b.reshape(pre, H, suf, -1))
    return out.reshape(pre * H * suf, -1) / jnp.sqrt(H * V.shape[2])


def project_input(V0, xpi):
    """``Z_0[mu, pi] = V0 x^pi / sqrt(N0)``: ``(P, n_pi, N_1)``."""
    return jnp.einsum("ji,mip->mpj", V0, xpi) / jnp.sqrt(xpi.shape[1])


def path_forward(spec: NetworkSpec, xpi, V0, values, a):
    """Network output from the path representation (equals ``forward_paths``, theory.md §2.4)."""
    Z = project_input(V0, xpi)
    for l, V in enumerate(values):
        Z = apply_layer(spec, l, V, Z)
    return jnp.einsum("mpj,j->m", Z, a) / jnp.sqrt(a.shape[0])


def backward_vectors(spec: NetworkSpec, values, a):
    """``[b^(1), ..., b^(L+1)]``, each ``(n_pi, N_l)``."""
    b = jnp.broadcast_to(a / jnp.sqrt(a.shape[0]), (spec.n_paths, a.shape[0]))
    out = [b]
    for l in reversed(range(spec.n_layers)):
        b = backward_layer(spec, l, values[l], b)
        out.append(b)
    return out[::-1]


def same_head_mask(spec: NetworkSpec, l: int):
    """``1[h_l(pi) = h_l(pi')]`` (0-based layer ``l``), ``(n_pi, n_pi)``."""
    h = head_membership(spec.heads)[:, l]
    return (h[:, None] == h[None, :]).astype(float)


def block_gram(Z, M, scale):
    """``G[mu, nu] = scale sum_{pi pi'} M[pi, pi'] Z[mu, pi] . Z[nu, pi']``  (``P x P``)."""
    return scale * jnp.einsum("mqi,nqi->mn", jnp.einsum("mpi,pq->mqi", Z, M), Z)


def layer_gram(spec: NetworkSpec, l: int, Z, b):
    """Gram ``J J^T`` of the block ``z_V{l+1}`` (0-based ``l``), z-coordinates."""
    M = (b @ b.T) * same_head_mask(spec, l)
    return block_gram(Z, M, spec.sigma2_layers[l] / (spec.heads[l] * Z.shape[2]))


def readout_gram(spec: NetworkSpec, Z):
    """Gram of ``z_a``: ``sigma_a^2 Xbar Xbar^T / N_a``."""
    xbar = Z.sum(axis=1)
    return spec.sigma2_readout * (xbar @ xbar.T) / Z.shape[2]


def matheron(rng_key, lin, z_shape, G, y, T):
    """Exact draw of ``z ~ N(0, I)`` conditioned on ``y ~ N(lin(z), T I)``, ``G = J J^T``.

    Returns ``(z, ok)``; ``ok`` is false when the Cholesky of ``G + T I`` failed.
    """
    k_z, k_e = jax.random.split(rng_key)
    z0 = std_normal(k_z, z_shape, y.dtype)
    eps = jnp.sqrt(T) * std_normal(k_e, y.shape, y.dtype)
    f0, vjp = jax.vjp(lin, z0)
    Lc = jnp.linalg.cholesky(G + T * jnp.eye(y.shape[0], dtype=y.dtype))
    alpha = jsl.cho_solve((Lc, True), y - f0 - eps)
    return z0 + vjp(alpha)[0], jnp.all(jnp.isfinite(Lc))


def scale_move(rng_key, zA, zB):
    """Exact group move along the scale ridge ``(z_A, z_B) -> (c z_A, z_B / c)`` of two adjacent
    blocks, which leaves ``f`` (and ``U``-independent likelihood) unchanged.

    Liu & Sabatti (2000): draw ``c`` from ``p(g(theta)) |J_g| dc / c``; in ``u = log c^2`` this is
    ``exp(p u - (a e^u + b e^-u) / 2)`` with ``a = |z_A|^2``, ``b = |z_B|^2``,
    ``p = (dim A - dim B) / 2`` (a log-GIG law).  One independence Metropolis step from ``u = 0``
    with a Gaussian proposal at its mode and curvature keeps that conditional invariant, hence
    the posterior.  Returns ``(z_A, z_B, accepted)``.
    """
    a, b = jnp.sum(zA * zA), jnp.sum(zB * zB)
    p = 0.5 * (zA.size - zB.size)
    log_t = lambda u: p * u - 0.5 * (a * jnp.exp(u) + b * jnp.exp(-u))
    mode = jnp.log((p + jnp.sqrt(p * p + a * b)) / a)
    sd = 1.0 / jnp.sqrt(0.5 * (a * jnp.exp(mode) + b * jnp.exp(-mode)))
    log_q = lambda u: -0.5 * ((u - mode) / sd) ** 2
    k_u, k_acc = jax.random.split(rng_key)
    u = mode + sd * jax.random.normal(k_u, (), zA.dtype)
    log_ratio = log_t(u) - log_t(0.0) + log_q(0.0) - log_q(u)
    ok = jnp.log(jax.random.uniform(k_acc, (), zA.dtype)) < log_ratio
    c = jnp.where(ok, jnp.exp(0.5 * u), 1.0)
    return zA * c, zB / c, ok


def log_density(spec: NetworkSpec, f, y, position):
    """Full-model log posterior in z-coordinates, up to a constant (theory.md §3)."""
    prior = sum(jnp.sum(v * v) for v in position.values())
    return -0.5 * jnp.sum((f - y) ** 2) / spec.temperature - 0.5 * prior


def init(position, spec: NetworkSpec, data: GibbsData) -> GibbsState:
    s = np.sqrt(spec.variances)
    values = [s[l + 1] * position[f"z_V{l + 1}"] for l in range(spec.n_layers)]
    f = path_forward(spec, data.xpi, s[0] * position["z_V0"], values, s[-1] * position["z_a"])
    return GibbsState(position, log_density(spec, f, data.y, position))


def build_kernel(spec: NetworkSpec, scale_moves: bool = True):
    """Return ``kernel(rng_key, state, data) -> (state, info)``: one systematic sweep
    ``V0, V1, .., VL, a``, each block drawn exactly from its conditional, then (``scale_moves``)
    one :func:`scale_move` per adjacent pair of blocks."""
    s = np.sqrt(spec.variances)
    L, T = spec.n_layers, spec.temperature

    def kernel(rng_key, state: GibbsState, data: GibbsData):
        z = dict(state.position)
        keys = jax.random.split(rng_key, L + 3)
        values = [s[l + 1] * z[f"z_V{l + 1}"] for l in range(L)]
        bs = backward_vectors(spec, values, s[-1] * z["z_a"])  # from the blocks above, fixed in this sweep
        ok = True
        # input projection: G = K_{U_1(W)}, U_1 = n_pi b1 b1^T
        b1 = bs[0]
        lin0 = lambda zz: jnp.einsum("pi,mip->m", b1 @ (s[0] * zz), data.xpi) / jnp.sqrt(data.xpi.shape[1])
        G0 = data.k_v0(spec.n_paths * (b1 @ b1.T))
        z["z_V0"], ok0 = matheron(keys[0], lin0, z["z_V0"].shape, G0, data.y, T)
        ok = ok & ok0
        Z = project_input(s[0] * z["z_V0"], data.xpi)
        for l in range(L):
            b, Zin = bs[l + 1], Z
            H, n_l = spec.heads[l], Zin.shape[2]

            def lin(zz, l=l, b=b, Zin=Zin, H=H, n_l=n_l):
                c = backward_layer(spec, l, s[l + 1] * zz, b)  # (n_pi, N_l)
                return jnp.einsum("pi,mpi->m", c, Zin)

            name = f"z_V{l + 1}"
            z[name], okl = matheron(keys[l + 1], lin, z[name].shape, layer_gram(spec, l, Zin, b), data.y, T)
            ok = ok & okl
            Z = apply_layer(spec, l, s[l + 1] * z[name], Zin)
        xbar = Z.sum(axis=1)
        lin_a = lambda zz: xbar @ (s[-1] * zz) / jnp.sqrt(xbar.shape[1])
        z["z_a"], oka = matheron(keys[L + 1], lin_a, z["z_a"].shape, readout_gram(spec, Z), data.y, T)
        ok = ok & oka
        f = lin_a(z["z_a"])
        names = ["z_V0"] + [f"z_V{l + 1}" for l in range(L)] + ["z_a"]
        n_acc = 0
        if scale_moves:  # f is invariant under each move, only the prior term changes
            for k, kk in enumerate(jax.random.split(keys[-1], L + 1)):
                z[names[k]], z[names[k + 1]], acc = scale_move(kk, z[names[k]], z[names[k + 1]])
                n_acc = n_acc + acc
        new = GibbsState(z, log_density(spec, f, data.y, z))
        info = GibbsInfo(~ok | ~jnp.isfinite(new.logdensity), jnp.asarray(L + 2),
                         jnp.asarray(n_acc / (L + 1) if scale_moves else 1.0))
        return new, info

    return kernel


def make_data(built) -> GibbsData:
    d = built.data
    return GibbsData(d.xpi_train, d.y, kernel_fn(d.phi_train, d.phi_train))


__all__ = ["GibbsState", "GibbsInfo", "GibbsData", "init", "build_kernel", "make_data", "matheron",
           "path_forward", "backward_vectors", "apply_layer", "backward_layer", "project_input",
           "layer_gram", "readout_gram", "block_gram", "same_head_mask", "log_density", "scale_move"]


# ---- driver glue ------------------------------------------------------------------------------

def as_program(built, cfg):
    """Gibbs as a driver program: start from a prior draw, no tuning (warm-up = burn-in)."""
    from ..inference._models import weight_shapes
    from ._chunked import Program

    spec = built.spec
    data = make_data(built)
    kernel = build_kernel(spec)
    shapes = weight_shapes(spec, collapsed=False)

    def init_fn(key):
        keys = jax.random.split(key, len(shapes))
        z = {k: std_normal(kk, s) for kk, (k, s) in zip(keys, shapes.items())}
        return init(z, spec, data)

    def sample_step(key, state):
        state, info = kernel(key, state, data)
        return state, {"diverging": info.is_divergent, "lp": state.logdensity, "n_gram_evals": info.n_solves,
                       "scale_accept": info.scale_accept}

    return Program(init_fn, lambda k, s: kernel(k, s, data)[0], lambda k, s: s, sample_step,
                   lambda s: s.position, {"diverging": "any", "n_gram_evals": "sum"})


def _runner():
    from ._chunked import chunked_runner

    return chunked_runner(as_program, "run_gibbs")


run_gibbs = _runner()
__all__ += ["as_program", "run_gibbs"]
