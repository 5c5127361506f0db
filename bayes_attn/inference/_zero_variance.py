"""Zero-variance control variates for posterior means of Wishart-chain runs.

*(project choice)* At large width the order parameters fluctuate by ``O(N^{-1/2})`` about
their mean while the finite-size corrections one wants to measure are ``O(1/N)``: the plain
Monte Carlo error of a posterior mean, ``O(N^{-1/2} ESS^{-1/2})``, hides them beyond
``N ~ ESS``.  The score ``s(xi) = grad ln p(xi | D)`` has posterior mean exactly zero (the
density vanishes at infinity in the unconstrained ``xi``), so for any coefficients ``beta``

    E[g] = E[g - beta . s]

and with ``beta`` the least-squares regression of ``g`` on ``s`` (first-order zero-variance
control variates, Mira, Solgi & Imparato 2013) the linear part of the fluctuations -- the
``O(N^{-1/2})`` part for a nearly Gaussian posterior -- cancels, leaving an ``O(1/N)`` residual.
The MCSE is that of the residual chains ``g - beta . s`` (ArviZ, rank-normalised ESS); fitting
``beta`` on the same draws adds an ``O(d / n)`` bias, negligible for ``d = 14`` parameters and
thousands of draws.

The scores are recomputed from the stored order parameters (``U`` -> Cholesky -> ``xi``), so
any run of the ``order_parameters`` model can be post-processed; see docs/wishart.md.
"""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._errors import InputError
from ..network import NetworkSpec
from ..theory import OrderParameterLayout
from .models import build_model


def _stacked_order_parameters(post: xr.Dataset, layout: OrderParameterLayout):
    """Draws of ``(U_a, [U_1..U_L])`` flattened over ``(chain, draw)``."""
    needed = ["U", "U_a"] + [f"U_{l}" for l in range(2, layout.n_layers + 1)]
    missing = [k for k in needed if k not in post]
    if missing:
        raise InputError(
            f"run: posterior lacks {', '.join(missing)}; zero-variance estimates need a "
            'run of model.kind = "order_parameters"'
        )
    n = post.sizes["chain"] * post.sizes["draw"]
    U_a = post["U_a"].values.reshape(n)
    Us = [post["U"].values.reshape(n, layout.sizes[0], layout.sizes[0])]
    for l in range(2, layout.n_layers + 1):
        p = layout.sizes[l - 1]
        Us.append(post[f"U_{l}"].values.reshape(n, p, p))
    return U_a, Us


def posterior_scores(post: xr.Dataset, task, spec: NetworkSpec, *, data: bool = True, batch: int = 2048) -> np.ndarray:
    """``grad_xi ln p(xi | D)`` at every stored draw: ``(chain, draw, d)``, ``d`` = chain dimension."""
    model, args = build_model(task, spec, "order_parameters", data=data)
    layout = model.layout

    @jax.jit
    def scores(U_a, Us):
        def one(u_a, us):
            xi = layout.pack(u_a, us, args.hyper)
            g = jax.grad(model.exact_log_density)(xi, args)
            return jnp.concatenate([jnp.ravel(g[k]) for k in layout.site_names])

        return jax.vmap(one)(U_a, Us)

    U_a, Us = _stacked_order_parameters(post, layout)
    out = [
        np.asarray(scores(jnp.asarray(U_a[i : i + batch]), [jnp.asarray(U[i : i + batch]) for U in Us]))
        for i in range(0, U_a.shape[0], batch)
    ]
    return np.concatenate(out).reshape(post.sizes["chain"], post.sizes["draw"], -1)


def zero_variance_mean(g: np.ndarray, scores: np.ndarray) -> dict[str, np.ndarray]:
    """Control-variate posterior mean of ``g`` (``(chain, draw, ...)``) with ``scores`` (``(chain, draw, d)``).

    Returns ``mean``, ``mcse`` (of the residual chains), ``mean_plain`` and ``mcse_plain``
    (no control variate), each of ``g``'s trailing shape, and ``beta`` (``(d, ...)``).
    """
    g = np.asarray(g, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    c, d_, rest = g.shape[0], g.shape[1], g.shape[2:]
    if s.shape[:2] != (c, d_):
        raise InputError(f"scores: shape {s.shape} does not match the draws {g.shape}")
    n = c * d_
    Y = g.reshape(n, -1)
    X = s.reshape(n, -1)
    Xc = X - X.mean(axis=0)
    Yc = Y - Y.mean(axis=0)
    beta, *_ = np.linalg.lstsq(Xc, Yc, rcond=None)
    resid = Y - X @ beta

    def mean_mcse(arr):
        da = xr.DataArray(arr.reshape(c, d_, -1), dims=["chain", "draw", "q"])
        return arr.mean(axis=0).reshape(rest), np.asarray(az.mcse(da)).reshape(rest)

    mean, mcse = mean_mcse(resid)
    mean_plain, mcse_plain = mean_mcse(Y)
    return {
        "mean": mean,
        "mcse": mcse,
        "mean_plain": mean_plain,
        "mcse_plain": mcse_plain,
        "beta": beta.reshape(X.shape[1], *rest),
    }


def zero_variance_statistics(dt: xr.DataTree, task, spec: NetworkSpec, names=("f", "U")) -> dict:
    """:func:`zero_variance_mean` of the posterior variables ``names`` of a Wishart-chain run."""
    post = dt["posterior"].ds
    scores = posterior_scores(post, task, spec)
    return {k: zero_variance_mean(post[k].values, scores) for k in names}


__all__ = ["posterior_scores", "zero_variance_mean", "zero_variance_statistics"]
