"""Exact finite-width posterior of the order parameters: the Wishart chain (docs/theory.md §5.2).

With ``V^(0)`` integrated out the likelihood depends on the weights only through ``U_1``
(theory.md §5.1), and under the prior ``(U_a, U_L, ..., U_1)`` is a Markov chain of
Wishart laws.  The exact posterior of the order parameters, w.r.t. Lebesgue measure on the
upper-triangular entries, is (theory.md §5.2)

    -2 ln p(U | D) = S_ent(U) + E(U_1) + sum_l (p_l + 1) ln det U_l + 2 ln U_a + const,

valid for ``N_l >= p_l``.  It lives in ``1 + sum_l p_l (p_l + 1) / 2`` dimensions whatever
the width, so NUTS on it gives exact finite-``N`` predictor statistics at ``N = 10^5``.

Parametrisation (theory.md §5.2, §4.7):

* ``U_l = L_l L_l^T``, ``L_l`` lower-triangular with ``(L_l)_ii = exp(theta_ii)``; the packed
  ``theta`` (row-major lower triangle) has log-Jacobian ``p ln 2 + sum_i (p - i + 2) theta_ii``;
* ``U_a = exp(theta_a)`` with log-Jacobian ``theta_a``.

*(project choice)* The sampled sites are ``xi = sqrt(N_l) (theta - theta_GP)`` (``xi_a``,
``xi_1 .. xi_L``), where ``theta_GP`` is the no-data point ``U_l = s_l I`` of theory.md §4.6.
This affine map has a constant Jacobian; it makes the prior scale of every site O(1) at every
width, so the driver's default ``init_to_uniform`` (``xi`` in ``[-2, 2]``) starts inside the
typical set at ``N = 10^5`` as well as at ``N = 16``, and the step size does not depend on ``N``.

``S_ent`` and ``E`` are imported from :mod:`bayes_attn.theory` (``-E / 2`` is the collapsed
likelihood ``ln N(y; 0, K_{U_1} + T I)`` up to ``-P ln(2 pi) / 2``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.flatten_util import ravel_pytree
from scipy.special import multigammaln
from numpyro.distributions import constraints

from .._errors import InputError
from ..network import NetworkSpec, gp_posterior, kernel_fn, renormalized_kernel_diag
from ..tasks import Task
from ._models import BuiltModel, ModelData


# ---- Cholesky parametrisation --------------------------------------------------------------

def tril_size(p: int) -> int:
    """Number of free entries ``p (p + 1) / 2`` of a symmetric ``p x p`` matrix."""
    return p * (p + 1) // 2


def _diag_positions(p: int) -> np.ndarray:
    """Positions of the diagonal in the packed row-major lower triangle."""
    i = np.arange(p)
    return i * (i + 1) // 2 + i


def cholesky_factor(theta, p: int):
    """``L`` with ``L_ii = exp(theta_ii)`` from the packed row-major lower triangle ``theta``."""
    rows, cols = np.tril_indices(p)
    vals = theta.at[_diag_positions(p)].set(jnp.exp(theta[_diag_positions(p)]))
    return jnp.zeros((p, p), dtype=theta.dtype).at[rows, cols].set(vals)


def cholesky_theta(U):
    """Inverse of :func:`cholesky_factor` composed with ``L L^T``: packed ``theta`` of ``U``."""
    p = U.shape[-1]
    L = jnp.linalg.cholesky(U)
    rows, cols = np.tril_indices(p)
    theta = L[rows, cols]
    d = _diag_positions(p)
    return theta.at[d].set(jnp.log(theta[d]))


def cholesky_log_jacobian(theta, p: int):
    """``ln |dU / dtheta| = p ln 2 + sum_{i=1}^p (p - i + 2) theta_ii`` (theory.md §5.2).

    ``U = L L^T`` as a map from the packed ``theta`` to the upper-triangular entries of ``U``.
    """
    weights = p + 1 - np.arange(p)  # (p - i + 2) for 1-based i
    return p * np.log(2.0) + jnp.sum(weights * theta[_diag_positions(p)])


# ---- layout of the chain -------------------------------------------------------------------

@dataclass(frozen=True)
class WishartLayout:
    """Sizes, widths and the GP centre of the order-parameter chain of a network.

    ``sizes[l-1] = p_l`` and ``widths[l-1] = N_l`` for ``l = 1..L``; ``widths[-1] = N_a``.
    ``centre`` holds the packed ``theta`` of the no-data point ``U_l = s_l I`` (theory.md §4.6,
    :func:`bayes_attn.theory.gp_order_parameters`) about which the sites are centred;
    ``centre_a = ln sigma_a^2``.
    """

    sizes: tuple[int, ...]
    widths: tuple[int, ...]
    variances: tuple[float, ...]
    centre_a: float
    centre: tuple

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> "WishartLayout":
        from ..theory import gp_order_parameters  # lazy, see _entropy

        check_widths(spec)
        sizes = tuple(spec.p(l) for l in range(1, spec.n_layers + 1))
        U_a0, Us0 = gp_order_parameters(spec)
        centre = tuple(np.asarray(cholesky_theta(jnp.asarray(U))) for U in Us0)
        return cls(sizes, tuple(spec.widths), tuple(spec.variances), float(np.log(U_a0)), centre)

    @property
    def n_layers(self) -> int:
        return len(self.sizes)

    @property
    def site_names(self) -> tuple[str, ...]:
        return ("xi_a",) + tuple(f"xi_{l}" for l in range(1, self.n_layers + 1))

    @property
    def dimension(self) -> int:
        """``1 + sum_l p_l (p_l + 1) / 2`` (theory.md §5.2)."""
        return 1 + sum(tril_size(p) for p in self.sizes)

    def site_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"xi_a": (), **{f"xi_{l}": (tril_size(p),) for l, p in enumerate(self.sizes, start=1)}}

    def unpack(self, xi: dict):
        """Sites -> ``(U_a, [U_1, ..., U_L], log_jacobian)``.

        ``log_jacobian`` is that of ``xi -> (U_a, upper triangles of U_l)``: the Cholesky and
        exponential Jacobians of theory.md §5.2 plus the constant of the affine centring.
        """
        N_a = self.widths[-1]
        theta_a = self.centre_a + xi["xi_a"] / np.sqrt(N_a)
        log_jac = theta_a - 0.5 * np.log(N_a)
        Us = []
        for l, p in enumerate(self.sizes, start=1):
            N = self.widths[l - 1]
            theta = self.centre[l - 1] + xi[f"xi_{l}"] / np.sqrt(N)
            L = cholesky_factor(theta, p)
            Us.append(L @ L.T)
            log_jac = log_jac + cholesky_log_jacobian(theta, p) - 0.5 * tril_size(p) * np.log(N)
        return jnp.exp(theta_a), Us, log_jac

    def pack(self, U_a, Us) -> dict:
        """Inverse of :meth:`unpack`: order parameters -> sites (``U_l`` must be positive definite)."""
        xi = {"xi_a": np.sqrt(self.widths[-1]) * (jnp.log(U_a) - self.centre_a)}
        for l, U in enumerate(Us, start=1):
            xi[f"xi_{l}"] = np.sqrt(self.widths[l - 1]) * (cholesky_theta(U) - self.centre[l - 1])
        return xi


def check_widths(spec: NetworkSpec) -> None:
    """``N_l >= p_l`` for every layer (non-singular Wishart), else :class:`InputError`."""
    for l in range(1, spec.n_layers + 1):
        N, p = spec.widths[l - 1], spec.p(l)
        if N < p:
            raise InputError(
                f"network.width: the wishart sampler needs N_{l} >= p_{l} = {p} (U_{l} is singular "
                f"below), got N_{l} = {N}; sample in weight space instead (sampler.kind = \"nuts\" "
                f"with collapsed = true, or \"gibbs\")")


# ---- log-density ---------------------------------------------------------------------------

def _entropy(spec: NetworkSpec, U_a, Us):
    """``S_ent(U)`` of theory.md §4.4, from :mod:`bayes_attn.theory` (imported lazily: the
    theory package reads sampled runs, so a top-level import would be circular)."""
    from ..theory import entropy

    return entropy(U_a, Us, spec)


def _energy(U_1, kernel, y, T):
    """``E(U_1)`` of theory.md §4.4 from :mod:`bayes_attn.theory` (lazy import, see above)."""
    from ..theory import energy

    return energy(U_1, kernel, y, T)


def wishart_log_normalizer(layout: WishartLayout):
    """Normalising constant of the prior chain in ``U`` coordinates.

    ``sum over (U_a, U_L, ..., U_1)`` of ``(N p / 2) ln(N / (2 sigma^2)) - ln Gamma_p(N / 2)``
    (``p = 1`` for ``U_a``): what the Wishart and chi-square densities of theory.md §5.2 carry
    beyond ``-S_ent / 2`` and the ``(p_l + 1)`` terms.
    """
    out = 0.0
    mats = [(layout.widths[-1], 1, layout.variances[-1])]
    mats += [(layout.widths[l], p, layout.variances[l + 1]) for l, p in enumerate(layout.sizes)]
    for N, p, s2 in mats:
        out += 0.5 * N * p * np.log(N / (2.0 * s2)) - multigammaln(0.5 * N, p)
    return out


def prior_log_density(layout: WishartLayout, spec: NetworkSpec, U_a, Us):
    """Normalised log-density of the prior Wishart chain at ``(U_a, U_1..U_L)`` (theory.md §5.2).

    ``-(S_ent + sum_l (p_l + 1) ln det U_l + 2 ln U_a) / 2`` plus :func:`wishart_log_normalizer`.
    """
    extra = 2.0 * jnp.log(U_a)
    for U, p in zip(Us, layout.sizes):
        extra = extra + (p + 1) * jnp.linalg.slogdet(U)[1]
    return -0.5 * (_entropy(spec, U_a, Us) + extra) + wishart_log_normalizer(layout)


def log_density_fn(layout: WishartLayout, spec: NetworkSpec, k_train=None, y=None):
    """``xi -> ln p(xi | D)`` up to the evidence (prior only when ``k_train`` is None).

    Prior chain + data term ``-E(U_1) / 2`` (the collapsed likelihood ``ln N(y; 0, K_{U_1} + T I)``
    up to ``-P ln(2 pi) / 2``) + log-Jacobian of ``xi -> U``.
    """
    def log_density(xi):
        U_a, Us, log_jac = layout.unpack(xi)
        out = prior_log_density(layout, spec, U_a, Us) + log_jac
        if k_train is not None:
            out = out - 0.5 * _energy(Us[0], k_train, y, spec.temperature)
        return out

    return log_density


def _flat_site(shape):
    support = constraints.real if shape == () else constraints.real_vector
    return dist.ImproperUniform(support, (), shape)


def wishart_model(layout: WishartLayout, log_density):
    """NumPyro model: flat sites ``xi_*`` and one factor carrying the whole log-density."""
    xi = {name: numpyro.sample(name, _flat_site(shape)) for name, shape in layout.site_shapes().items()}
    numpyro.factor("log_density", log_density(xi))


def order_parameter_draws(layout: WishartLayout, xi: dict) -> dict:
    """``{"U": U_1, "U_a": U_a, "U_2": .., "U_L": ..}`` from sites."""
    U_a, Us, _ = layout.unpack(xi)
    out = {"U": Us[0], "U_a": U_a}
    out.update({f"U_{l}": U for l, U in enumerate(Us[1:], start=2)})
    return out


def build_wishart(task: Task, spec: NetworkSpec, collapsed: bool = True, *, data: bool = True) -> BuiltModel:
    """Wishart-chain model for the driver (``kind = "wishart"``).

    ``derived(xi)`` gives per draw ``U`` (= ``U_1``), ``U_a``, ``U_2..U_L`` and the
    Rao–Blackwellised ``f`` = ``m_{U_1}(x*)`` and ``f_var`` = ``v_{U_1}(x*)`` on every test
    input (theory.md §5.1-5.2).  ``collapsed`` is ignored: ``V^(0)`` is always integrated out.
    ``data=False`` drops the likelihood (the prior chain alone, for tests).
    """
    layout = WishartLayout.from_spec(spec)
    md = ModelData.from_task(task, spec)
    k_train = kernel_fn(md.phi_train, md.phi_train)
    k_cross = kernel_fn(md.phi_train, md.phi_test)
    log_density = log_density_fn(layout, spec, k_train if data else None, md.y)

    def model():
        wishart_model(layout, log_density)

    def derived(xi):
        out = order_parameter_draws(layout, xi)
        U = out["U"]
        mean, var = gp_posterior(k_train(U), k_cross(U), renormalized_kernel_diag(md.phi_test, U), md.y,
                                 spec.temperature)
        out.update(f=mean, f_var=var)
        return out

    return BuiltModel(model, derived, md, spec, True, log_density)


class TheoryStart(NamedTuple):
    """Where ``sampler.init = "theory"`` starts NUTS: sites per chain and the Laplace metric."""

    init_params: dict                       # site -> (chains, ...) array
    inverse_mass_matrix: np.ndarray | None  # (d, d), sites flattened in sorted-name order; None if -H not PD


def theory_start(built: BuiltModel, chains: int, seed: int, jitter: float = 1.0) -> TheoryStart:
    """Start chains at the theory's saddle point with the Laplace metric (``sampler.init = "theory"``).

    ``built``: the :func:`build_wishart` model (its data and log-density are reused, not rebuilt).
    Sites are ``layout.pack(U_a*, U_l*)`` of the saddle point of theory.md §4.3 plus an
    independent ``U(-jitter, jitter)`` per site and chain: the sites are width-scaled (posterior
    s.d. O(1), docs/wishart.md), so the chains start in the typical set yet dispersed.  The
    initial inverse mass matrix is ``(-H)^-1``, ``H`` the Hessian of the exact log-density at the
    saddle point (a Laplace approximation, kept fixed while warm-up adapts the step size,
    :func:`run_nuts`); ``None``, with a warning, when ``-H`` is not positive definite (then the
    metric adapts as usual).  On a 16-path, P = 600 digits problem at N = 100 the uniform start
    with the adapted metric ran at 2-14 s per warm-up iteration (condition number of ``-H``:
    171).  A saddle point that did not converge is an :class:`InputError`, not a silent fallback.
    """
    from ..theory import solve  # lazy: bayes_attn.theory imports this package's siblings

    spec, md = built.spec, built.data
    sol = solve(spec, md.phi_train, md.y, warn=False)
    if not sol.status.ok:
        raise InputError(f"sampler.init: the theory's saddle point did not converge ({sol.status.message}); "
                         "use init = \"uniform\"")
    layout = WishartLayout.from_spec(spec)
    xi = {k: jnp.asarray(v) for k, v in layout.pack(sol.U_a, sol.Us).items()}
    log_density = built.log_density
    flat, unravel = ravel_pytree(xi)  # sorted site names, as NumPyro flattens a dense block
    neg_h = -np.asarray(jax.hessian(lambda v: log_density(unravel(v)))(flat))
    neg_h = 0.5 * (neg_h + neg_h.T)
    inv_mass = None
    if np.all(np.isfinite(neg_h)) and np.linalg.eigvalsh(neg_h)[0] > 0:
        inv_mass = np.linalg.inv(neg_h)
        inv_mass = 0.5 * (inv_mass + inv_mass.T)
    else:
        warnings.warn("sampler.init = 'theory': the negative Hessian at the saddle point is not positive definite; "
                      "starting at U* with the metric adapted by warm-up instead of the Laplace metric",
                      RuntimeWarning, stacklevel=2)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(xi))
    init = {name: v[None] + jax.random.uniform(k, (chains, *v.shape), minval=-jitter, maxval=jitter)
            for k, (name, v) in zip(keys, sorted(xi.items()))}
    return TheoryStart(init, inv_mass)


def score_fn(log_density):
    """``xi -> grad ln p(xi | D)`` (zero posterior mean; see :mod:`._zero_variance`)."""
    return jax.grad(log_density)


__all__ = [
    "WishartLayout",
    "build_wishart",
    "check_widths",
    "cholesky_factor",
    "cholesky_theta",
    "cholesky_log_jacobian",
    "log_density_fn",
    "order_parameter_draws",
    "prior_log_density",
    "score_fn",
    "tril_size",
    "wishart_log_normalizer",
    "wishart_model",
]
