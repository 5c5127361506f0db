"""NumPyro models of the attention-path network in weight space (docs/theory.md §3, §5.1).

Both models are non-centred: the sampled sites are standard normals ``z_*`` and the weights are
``sigma * z``.  With isotropic Gaussian priors this is the same posterior and it keeps the
geometry of every block on the same scale when variances differ.

* ``model.kind = "weights"`` (:class:`WeightsModel`) samples every weight (``V^(0)``, every value
  matrix, the readout); the likelihood is ``y ~ N(f(x), T)`` (eq. (3b)).
* ``model.kind = "collapsed"`` (:class:`CollapsedModel`) integrates ``V^(0)`` out exactly:
  ``y ~ N(0, K_{U_1(W)} + T I)`` (eq. (5.1a)), written with an explicit float64 Cholesky in
  ``numpyro.factor``; its stored predictions are the Rao–Blackwellised ``m_W``, ``v_W`` (eq. (5.1c)).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from ...linalg import kernel_log_marginal
from ...network import effective_weights, forward_paths, gram, predictive
from ._base import Model, ModelArgs


def weight_shapes(heads, n0: int, widths, collapsed: bool) -> dict[str, tuple[int, ...]]:
    """Shapes of the standard-normal sites: ``z_V0`` (unless collapsed), ``z_V1..z_VL``, ``z_a``."""
    N = widths  # (N_1, ..., N_L, N_a)
    shapes = {} if collapsed else {"z_V0": (N[0], n0)}
    for l, H in enumerate(heads):
        shapes[f"z_V{l + 1}"] = (H, N[l + 1], N[l])
    shapes["z_a"] = (N[-1],)
    return shapes


def weights_from_latent(variances, z: dict, n_layers: int):
    """Scale standard-normal sites to weights: ``(V0 or None, [V1..VL], a)``."""
    s = jnp.sqrt(variances)
    V0 = s[0] * z["z_V0"] if "z_V0" in z else None
    values = [s[l + 1] * z[f"z_V{l + 1}"] for l in range(n_layers)]
    return V0, values, s[-1] * z["z_a"]


def _sample_sites(shapes: dict, fixed: dict | None) -> dict:
    with numpyro.handlers.condition(data=fixed or {}):
        return {
            name: numpyro.sample(name, dist.Normal(0.0, 1.0).expand(shape).to_event(len(shape)))
            for name, shape in shapes.items()
        }


def _weights_out(z, hyper, n_layers, out: dict) -> dict:
    V0, values, a = weights_from_latent(hyper.variances, z, n_layers)
    if V0 is not None:
        out["V0"] = V0
    for l, V in enumerate(values, start=1):
        out[f"V{l}"] = V
    out["a"] = a
    return out


@dataclass(frozen=True)
class WeightsModel(Model):
    """Every weight sampled; ``y ~ N(f(x), T)`` (docs/theory.md eq. (3b)).  Stores ``f`` and ``U``."""

    n0: int = 1
    widths: tuple[int, ...] = ()

    kind = "weights"

    def site_shapes(self):
        return weight_shapes(self.heads, self.n0, self.widths, collapsed=False)

    def numpyro_model(self, args: ModelArgs):
        z = _sample_sites(self.site_shapes(), args.fixed)
        V0, values, a = weights_from_latent(args.hyper.variances, z, len(self.heads))
        f = forward_paths(args.xpi_train, V0, effective_weights(values, a))
        numpyro.sample("y", dist.Normal(f, jnp.sqrt(args.hyper.temperature)), obs=args.y)

    def derived(self, z, args, store_weights=False):
        z = {**(args.fixed or {}), **z}
        V0, values, a = weights_from_latent(args.hyper.variances, z, len(self.heads))
        w_eff = effective_weights(values, a)
        out = {"f": forward_paths(args.xpi_test, V0, w_eff), "U": gram(w_eff)}
        return _weights_out(z, args.hyper, len(self.heads), out) if store_weights else out


@dataclass(frozen=True)
class CollapsedModel(Model):
    """``V^(0)`` integrated out: ``y ~ N(0, K_{U_1(W)} + T I)`` (docs/theory.md eq. (5.1a)).

    Stores ``U`` and the Rao–Blackwellised ``f`` = ``m_W(x*)``, ``f_var`` = ``v_W(x*)`` (eq. (5.1c)).
    """

    n0: int = 1
    widths: tuple[int, ...] = ()

    kind = "collapsed"

    def site_shapes(self):
        return weight_shapes(self.heads, self.n0, self.widths, collapsed=True)

    def numpyro_model(self, args: ModelArgs):
        z = _sample_sites(self.site_shapes(), args.fixed)
        _, values, a = weights_from_latent(args.hyper.variances, z, len(self.heads))
        U = gram(effective_weights(values, a))
        numpyro.factor("y", kernel_log_marginal(args.kernels.train, U, args.y, args.hyper.temperature))

    def derived(self, z, args, store_weights=False):
        z = {**(args.fixed or {}), **z}
        _, values, a = weights_from_latent(args.hyper.variances, z, len(self.heads))
        U = gram(effective_weights(values, a))
        mean, var = predictive(U, args.kernels, args.y, args.hyper.temperature)
        out = {"f": mean, "f_var": var, "U": U}
        return _weights_out(z, args.hyper, len(self.heads), out) if store_weights else out


__all__ = ["WeightsModel", "CollapsedModel", "weight_shapes", "weights_from_latent"]
