"""The exact order-parameter posterior as a NumPyro model (``model.kind = "order_parameters"``).

The density is :func:`bayes_attn.theory.exact_log_density` (docs/theory.md eq. (5.2b)) in the
width-scaled sites ``xi`` of eq. (5.2f): flat (improper uniform) sites and one factor carrying the
whole log-density.  It lives in ``1 + sum_l p_l (p_l + 1) / 2`` dimensions whatever the width, so
NUTS on it gives exact finite-``N`` predictor statistics at ``N = 10^5``.  The widths are traced:
one compiled sampler serves every width.

:func:`theory_start` is the ``sampler.init = "theory"`` start: chains at the saddle point with the
Laplace metric (docs/wishart.md, "Starting at the saddle point").
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.flatten_util import ravel_pytree
from numpyro.distributions import constraints

from ..._errors import InputError
from ...network import predictive
from ...theory import OrderParameterLayout, exact_log_density, exact_log_prior_and_likelihood, solve
from ._base import Model, ModelArgs


def _flat_site(shape):
    support = constraints.real if shape == () else constraints.real_vector
    return dist.ImproperUniform(support, (), shape)


@dataclass(frozen=True)
class OrderParameterModel(Model):
    """Sites ``xi_a, xi_1, ..., xi_L`` (docs/theory.md eq. (5.2f)); stores ``U`` (= ``U_1``), ``U_a``,
    ``U_2..U_L`` and the Rao–Blackwellised ``f`` = ``m_{U_1}(x*)``, ``f_var`` = ``v_{U_1}(x*)``.

    ``data = False`` drops the likelihood (the prior chain alone, for tests).
    """

    data: bool = True

    kind = "order_parameters"

    @property
    def layout(self) -> OrderParameterLayout:
        return OrderParameterLayout.from_heads(self.heads)

    def site_shapes(self):
        return self.layout.site_shapes()

    def exact_log_density(self, xi, args: ModelArgs):
        """:func:`bayes_attn.theory.exact_log_density` at the sites ``xi``."""
        kd = args.kernels.train if self.data else None
        return exact_log_density(self.layout, xi, args.hyper, kd, args.y)

    def log_prior_and_likelihood(self, xi, args: ModelArgs):
        """:func:`bayes_attn.theory.exact_log_prior_and_likelihood` at the sites ``xi`` (one pass)."""
        kd = args.kernels.train if self.data else None
        return exact_log_prior_and_likelihood(self.layout, xi, args.hyper, kd, args.y)

    def numpyro_model(self, args: ModelArgs):
        xi = {name: numpyro.sample(name, _flat_site(shape)) for name, shape in self.site_shapes().items()}
        numpyro.factor("log_density", self.exact_log_density(xi, args))

    def derived(self, xi, args, store_weights=False):
        U_a, Us, _ = self.layout.unpack(xi, args.hyper)
        out = {"U": Us[0], "U_a": U_a}
        out.update({f"U_{l}": U for l, U in enumerate(Us[1:], start=2)})
        mean, var = predictive(Us[0], args.kernels, args.y, args.hyper.temperature)
        out.update(f=mean, f_var=var)
        return out


class TheoryStart(NamedTuple):
    """Where ``sampler.init = "theory"`` starts: sites per chain and the Laplace metric."""

    positions: dict  # site -> (chains, ...) array
    inverse_mass_matrix: np.ndarray | None  # (d, d), sites flattened in sorted-name order; None if -H not PD


@functools.lru_cache(maxsize=None)
def _negative_hessian(model: OrderParameterModel):
    """``(sites, args) -> -H``: the Hessian of the exact log-density in the flattened sites (sorted site names, as
    NumPyro flattens a dense block), one compiled program per model and shapes (evaluated op by op, it compiled
    some four hundred small programs in every new process)."""

    def neg_h(xi, args):
        flat, unravel = ravel_pytree(xi)
        return -jax.hessian(lambda v: model.exact_log_density(unravel(v), args))(flat)

    return jax.jit(neg_h)


def theory_start(
    model: OrderParameterModel, args: ModelArgs, spec, chains: int, seed: int, jitter: float = 1.0
) -> TheoryStart:
    """Start chains at the theory's saddle point with the Laplace metric (``sampler.init = "theory"``).

    Sites are ``layout.pack(U_a*, U_l*)`` of the saddle point (docs/theory.md §4.4) plus an
    independent ``U(-jitter, jitter)`` per site and chain: the sites are width-scaled (posterior s.d.
    O(1), docs/wishart.md), so the chains start in the typical set yet dispersed.  The inverse mass
    matrix is ``(-H)^-1``, ``H`` the Hessian of the exact log-density at the saddle point (a Laplace
    approximation, kept fixed while warm-up adapts the step size); ``None``, with a warning, when
    ``-H`` is not positive definite (the metric then adapts as usual).  On the 16-path, P = 600 digits
    problem the uniform start with a windowed dense metric (a 147 x 147 covariance estimated from 25-100
    draws, hence rank-deficient) made warm-up trees run at their full depth (docs/wishart.md).  A saddle point that did not converge is an
    :class:`InputError`, not a silent fallback.
    """
    # the training set as the model sees it (its path-space points or its inputs, build_model's route), as given
    sol = solve(spec, args.kernels.train.phi_a, args.y, warn=False, path_space="dense")
    if not sol.status.ok:
        raise InputError(
            f'sampler.init: the theory\'s saddle point did not converge ({sol.status.message}); use init = "uniform"'
        )
    xi = {k: jnp.asarray(v) for k, v in model.layout.pack(sol.U_a, sol.Us, args.hyper).items()}
    neg_h = np.asarray(_negative_hessian(model)(xi, args))
    neg_h = 0.5 * (neg_h + neg_h.T)
    inv_mass = None
    if np.all(np.isfinite(neg_h)) and np.linalg.eigvalsh(neg_h)[0] > 0:
        inv_mass = np.linalg.inv(neg_h)
        inv_mass = 0.5 * (inv_mass + inv_mass.T)
    else:
        warnings.warn(
            "sampler.init = 'theory': the negative Hessian at the saddle point is not positive definite; "
            "starting at U* with the metric adapted by warm-up instead of the Laplace metric",
            RuntimeWarning,
            stacklevel=2,
        )
    keys = jax.random.split(jax.random.PRNGKey(seed), len(xi))
    init = {
        name: v[None] + jax.random.uniform(k, (chains, *v.shape), minval=-jitter, maxval=jitter)
        for k, (name, v) in zip(keys, sorted(xi.items()))
    }
    return TheoryStart(init, inv_mass)


__all__ = ["OrderParameterModel", "TheoryStart", "theory_start"]
