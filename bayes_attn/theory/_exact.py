"""The exact finite-width posterior of the order parameters (docs/theory.md §5.2).

With ``V^(0)`` integrated out the likelihood depends on the weights only through ``U_1``
(eq. (5.1a)), and under the prior ``(U_a, U_L, ..., U_1)`` is a Markov chain of Wishart laws
(eq. (5.2a)).  The exact posterior of the order parameters, with respect to Lebesgue measure on
the upper-triangular entries and for ``N_l >= p_l``, is (eq. (5.2b))

    -2 ln p(U | D) = S_ent(U) + E(U_1) + sum_l (p_l + 1) ln det U_l + 2 ln U_a + const.

It lives in ``1 + sum_l p_l (p_l + 1) / 2`` dimensions whatever the width.  The saddle-point theory
(§4.4) is its Laplace limit.  This module holds the density; :mod:`bayes_attn.inference` samples it
(the ``order_parameters`` model) and :mod:`._evidence` integrates it.

Coordinates *(project choice)*, eq. (5.2f): non-centred (Bartlett) sites.  ``U_a = sigma_a^2 e^{xi_a / sqrt(N_a)}``
and ``U_l = C_l A_l A_l^T C_l^T`` with ``C_l C_l^T`` the scale of ``U_l | U_{l+1}`` and ``A_l`` the
log-Cholesky factor (eq. (5.2d)) of ``xi_l / sqrt(N_l)``.  Under the prior the sites are independent
standard laws (log chi-square on diagonals, N(0, 1) off them) at every width; ``xi = 0`` is the no-data
point ``U_l = s_l I`` (eq. (4.6a)).  The centred sites used before had a funnel at small width
(docs/wishart.md).

Widths, variances and the temperature enter through a traced :class:`~bayes_attn.network.Hyper`,
so one compiled density serves every width.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from .._errors import InputError
from ..linalg import (
    KernelData,
    cholesky_factor,
    cholesky_log_jacobian,
    cholesky_theta,
    diagonal,
    log_det_from_cholesky,
    tril_size,
)
from ..network import NetworkSpec
from ._action import energy, entropy


def check_widths(spec: NetworkSpec) -> None:
    """``N_l >= p_l`` for every layer (non-singular Wishart, eq. (5.2a)), else :class:`InputError`."""
    for l in range(1, spec.n_layers + 1):
        N, p = spec.widths[l - 1], spec.p(l)
        if N < p:
            raise InputError(
                f"network.width: the order-parameter model needs N_{l} >= p_{l} = {p} (U_{l} is singular "
                f'below), got N_{l} = {N}; sample in weight space instead (model.kind = "collapsed" '
                f'with the nuts sampler, or sampler.kind = "gibbs")'
            )


@dataclass(frozen=True)
class OrderParameterLayout:
    """Sizes ``(p_1, ..., p_L)`` of the order parameters and the coordinates of eqs. (5.2d)–(5.2f).

    Static (hashable); the widths and variances come in as a traced ``hyper`` argument.
    """

    sizes: tuple[int, ...]

    @classmethod
    def from_heads(cls, heads) -> "OrderParameterLayout":
        heads = tuple(int(h) for h in heads)
        return cls(tuple(int(np.prod(heads[l:])) for l in range(len(heads))))

    @property
    def n_layers(self) -> int:
        return len(self.sizes)

    @property
    def site_names(self) -> tuple[str, ...]:
        return ("xi_a",) + tuple(f"xi_{l}" for l in range(1, self.n_layers + 1))

    @property
    def dimension(self) -> int:
        """``1 + sum_l p_l (p_l + 1) / 2`` (docs/theory.md §5.2)."""
        return 1 + sum(tril_size(p) for p in self.sizes)

    def site_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"xi_a": (), **{f"xi_{l}": (tril_size(p),) for l, p in enumerate(self.sizes, start=1)}}

    def scale_factor(self, l: int, U_next, hyper):
        """``C_l = sigma_l (I_{H_l} kron chol U_{l+1})``: the Cholesky factor of the scale ``Sigma_l`` of
        ``N_l U_l | U_{l+1} ~ Wishart(N_l, Sigma_l)`` (eq. (5.2a)); ``U_next`` is ``U_{l+1}`` (``U_a`` as 1 x 1 for l = L)."""
        return self._scale_from_factor(l, jnp.linalg.cholesky(U_next), hyper)

    def _scale_from_factor(self, l: int, L_next, hyper):
        """:meth:`scale_factor` from the Cholesky factor ``L_next`` of ``U_{l+1}``."""
        H = self.sizes[l - 1] // L_next.shape[0]
        return jnp.sqrt(hyper.sigma2_layers[l - 1]) * jnp.kron(jnp.eye(H), L_next)

    def unpack(self, xi: dict, hyper):
        """Sites -> ``(U_a, [U_1, ..., U_L], log_jacobian)`` (eq. (5.2f), non-centred); :meth:`unpack_factors`
        without the factors."""
        U_a, Us, _, log_jac = self.unpack_factors(xi, hyper)
        return U_a, Us, log_jac

    def unpack_factors(self, xi: dict, hyper):
        """Sites -> ``(U_a, [U_1, ..., U_L], [L_1, ..., L_L], log_jacobian)`` (eq. (5.2f), non-centred), with
        ``L_l`` the lower Cholesky factor of ``U_l`` (positive diagonal), which the construction yields for free.

        ``U_a = sigma_a^2 exp(xi_a / sqrt(N_a))``; then for ``l = L, ..., 1``: ``A_l`` = the
        log-Cholesky factor of ``xi_l / sqrt(N_l)`` and ``U_l = C_l A_l A_l^T C_l^T``.
        ``log_jacobian`` is that of ``xi -> (U_a, upper triangles of U_l)``: eqs. (5.2d), (5.2e), the
        ``|det C_l|^(p_l + 1)`` of ``W -> C W C^T`` and the constants of the width scaling.
        """
        N_a = hyper.widths[-1]
        theta_a = jnp.log(hyper.sigma2_readout) + xi["xi_a"] / jnp.sqrt(N_a)
        U_a = jnp.exp(theta_a)
        log_jac = theta_a - 0.5 * jnp.log(N_a)
        Us, Ls = [None] * self.n_layers, [None] * self.n_layers
        L_next = jnp.sqrt(U_a).reshape(1, 1)  # the Cholesky factor of U_{L+1} = U_a
        for l in range(self.n_layers, 0, -1):
            p, N = self.sizes[l - 1], hyper.widths[l - 1]
            theta = xi[f"xi_{l}"] / jnp.sqrt(N)
            C = self._scale_from_factor(l, L_next, hyper)
            L_next = Ls[l - 1] = C @ cholesky_factor(theta, p)  # lower triangular, positive diagonal
            Us[l - 1] = L_next @ L_next.T
            log_jac = (
                log_jac
                + cholesky_log_jacobian(theta, p)
                + (p + 1) * jnp.sum(jnp.log(diagonal(C)))
                - 0.5 * tril_size(p) * jnp.log(N)
            )
        return U_a, Us, Ls, log_jac

    def pack(self, U_a, Us, hyper) -> dict:
        """Inverse of :meth:`unpack`: order parameters -> sites (``U_l`` positive definite);
        ``A_l = C_l^{-1} chol U_l``."""
        xi = {"xi_a": jnp.sqrt(hyper.widths[-1]) * (jnp.log(U_a) - jnp.log(hyper.sigma2_readout))}
        U_next = jnp.reshape(U_a, (1, 1))
        for l in range(self.n_layers, 0, -1):
            A = jsl.solve_triangular(self.scale_factor(l, U_next, hyper), jnp.linalg.cholesky(Us[l - 1]), lower=True)
            xi[f"xi_{l}"] = jnp.sqrt(hyper.widths[l - 1]) * cholesky_theta(A @ A.T)
            U_next = Us[l - 1]
        return xi


#: Lanczos' approximation of the gamma function, g = 7 with nine coefficients (docs/theory.md, eq. (5.2c)):
#: ln Gamma to rounding for arguments >= 1/2
_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def log_gamma(x):
    """``ln Gamma(x)`` for ``x >= 1/2`` by Lanczos' approximation (docs/theory.md, eq. (5.2c)).

    *(project choice)* Arithmetic only, instead of :func:`jax.scipy.special.gammaln`: from jax 0.12.1 on, the
    gamma function compiles to a CPU library call under :func:`jax.jit` but to a table of operations in an
    exported program (:mod:`bayes_attn._programs`), which lengthened the compilation of every order-parameter
    sampler's disk program (docs/design.md); this form is the same few dozen operations on either route and
    agrees with SciPy's ``gammaln`` to rounding (tests/test_wishart.py).
    """
    x = x - 1.0
    series = _LANCZOS[0] + sum(c / (x + i) for i, c in enumerate(_LANCZOS[1:], start=1))
    t = x + _LANCZOS_G + 0.5
    return 0.5 * np.log(2.0 * np.pi) + (x + 0.5) * jnp.log(t) - t + jnp.log(series)


def log_multigamma(a, p: int):
    """``ln Gamma_p(a) = p (p - 1) / 4 ln pi + sum_{j=1..p} ln Gamma(a + (1 - j) / 2)`` for ``a >= p / 2``
    (:func:`log_gamma`; docs/theory.md, eq. (5.2c))."""
    return 0.25 * p * (p - 1) * np.log(np.pi) + sum(log_gamma(a - 0.5 * j) for j in range(p))


def wishart_log_normalizer(sizes, hyper):
    """Normalising constant of the prior chain in ``U`` coordinates (eq. (5.2c)).

    ``sum over (U_a, U_L, ..., U_1)`` of ``(N p / 2) ln(N / (2 sigma^2)) - ln Gamma_p(N / 2)``
    (``p = 1`` for ``U_a``): what the Wishart and chi-square densities carry beyond ``-S_ent / 2``
    and the ``(p_l + 1)`` terms.
    """
    mats = [(hyper.widths[-1], 1, hyper.variances[-1])]
    mats += [(hyper.widths[l], p, hyper.variances[l + 1]) for l, p in enumerate(sizes)]
    out = 0.0
    for N, p, s2 in mats:
        out = out + 0.5 * N * p * jnp.log(N / (2.0 * s2)) - log_multigamma(0.5 * N, p)
    return out


def prior_log_density(U_a, Us, hyper, factors=None):
    """Normalised log-density of the prior Wishart chain at ``(U_a, U_1..U_L)`` (eqs. (5.2a), (5.2c)).

    ``-(S_ent + sum_l (p_l + 1) ln det U_l + 2 ln U_a) / 2`` plus :func:`wishart_log_normalizer`.
    ``factors``: the lower Cholesky factors of ``Us`` where the caller holds them (the same value).
    """
    if factors is None:
        factors = [jnp.linalg.cholesky(U) for U in Us]
    extra = 2.0 * jnp.log(U_a)
    for L in factors:
        extra = extra + (L.shape[0] + 1) * log_det_from_cholesky(L)
    return -0.5 * (entropy(U_a, Us, hyper, factors) + extra) + wishart_log_normalizer([U.shape[0] for U in Us], hyper)


def exact_log_prior_and_likelihood(layout: OrderParameterLayout, xi: dict, hyper, kd: KernelData | None = None, y=None):
    """The two terms of :func:`exact_log_density`, from one unpacking of the sites: ``(prior, likelihood)``.

    ``prior``: the prior chain's log-density plus the log-Jacobian of ``xi -> U`` (eq. (5.2b) without data);
    ``likelihood``: the data term ``-E(U_1) / 2`` (``0`` when ``kd`` is None).  Tempering scales the second alone
    (docs/samplers.md, "Tempering").
    """
    U_a, Us, Ls, log_jac = layout.unpack_factors(xi, hyper)
    prior = prior_log_density(U_a, Us, hyper, Ls) + log_jac
    if kd is None:
        return prior, jnp.zeros_like(prior)
    return prior, -0.5 * energy(Us[0], kd, y, hyper.temperature)


def exact_log_density(layout: OrderParameterLayout, xi: dict, hyper, kd: KernelData | None = None, y=None):
    """``ln p(xi | D) + ln p(D) + (P/2) ln 2 pi`` (eq. (5.2b) in the sites of eq. (5.2f)).

    Prior chain + log-Jacobian of ``xi -> U`` + data term ``-E(U_1) / 2`` (the collapsed likelihood
    ``ln N(y; 0, K_{U_1} + T I)`` up to ``-(P/2) ln 2 pi``); the prior alone when ``kd`` is None.
    Integrating ``exp`` of this over ``xi`` gives ``p(D) (2 pi)^{P/2}`` (the evidence up to that constant).
    """
    prior, likelihood = exact_log_prior_and_likelihood(layout, xi, hyper, kd, y)
    return prior + likelihood


__all__ = [
    "OrderParameterLayout",
    "check_widths",
    "wishart_log_normalizer",
    "prior_log_density",
    "exact_log_density",
    "exact_log_prior_and_likelihood",
]
