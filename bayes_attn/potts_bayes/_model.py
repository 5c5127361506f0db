"""The pseudo-posterior of single-head factored attention as a model of the chunked runner (docs/potts.md §11.1).

The runner (:func:`bayes_attn.inference.run_chains`) and its samplers need a model split in two, as every model
of :mod:`bayes_attn.inference.models` is: a static, hashable description (:class:`PseudoPosteriorModel`: the
shapes, and whether there are fields) and traced arguments (:class:`PseudoPosteriorArgs`: the sequences,
omega and the prior scales), so that one compiled program serves every data set of the same shape and every
omega.  The model provides what the samplers read: ``numpyro_model(args)`` (NumPyro's own
:func:`~bayes_attn.potts.pl_model`), ``free_sites(args)`` (every site) and ``log_density(z, args)`` (both from
:class:`bayes_attn.inference.models.SampledModel`, which every model shares) and the quantities stored per draw,
``derived(z, args)``: the attention ``A`` (L, L) with its zero diagonal, ``V`` (C, C), the fields
``b`` (L, C), and the gauge-invariant ones the verdict gates, the gauge-fixed couplings ``K0`` (L, L, C, C)
and fields ``h0`` (L, C) (:func:`~bayes_attn.potts.gauged_couplings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..inference.models import SampledModel
from ..potts import gauged_couplings, pl_model, pl_params


class PseudoPosteriorArgs(NamedTuple):
    """Traced inputs of :class:`PseudoPosteriorModel` (a JAX pytree): the sequences ``s`` (M, L) int, the
    pseudo-likelihood's weight ``omega``, the prior standard deviations of ``A``, ``V`` and the fields
    (``scale_b`` is read only by a model with fields) and the sequence weights ``weights`` (M,) (ones: every
    sequence counted once)."""

    s: jnp.ndarray
    omega: jnp.ndarray
    scale_A: jnp.ndarray
    scale_V: jnp.ndarray
    scale_b: jnp.ndarray
    weights: jnp.ndarray

    def data_arrays(self) -> tuple:
        """The arrays that determine a run of the model (for its checkpoint's fingerprint)."""
        return tuple(self)


@dataclass(frozen=True)
class PseudoPosteriorModel(SampledModel):
    """Static part of the pseudo-posterior: ``L`` sites, ``C`` colours, per-site ``fields`` or not (hashable: a
    static argument of the runner's compiled programs)."""

    L: int
    C: int
    fields: bool = False

    kind = "potts_pseudo_posterior"

    def site_shapes(self) -> dict[str, tuple[int, ...]]:
        """Latent sites in the order :func:`~bayes_attn.potts.pl_model` samples them: the off-diagonal entries
        of ``A``, then ``V``, then the fields ``b``."""
        shapes = {"A_off": (self.L * (self.L - 1),), "V": (self.C, self.C)}
        if self.fields:
            shapes["b"] = (self.L, self.C)
        return shapes

    @property
    def n_params(self) -> int:
        """Number of free parameters (the length of the flat vector of the sites)."""
        return sum(int(np.prod(v)) for v in self.site_shapes().values())

    def numpyro_model(self, args: PseudoPosteriorArgs) -> None:
        """The NumPyro model of the pseudo-posterior (:func:`~bayes_attn.potts.pl_model`)."""
        scale_b = args.scale_b if self.fields else None
        pl_model(args.s, self.L, self.C, args.omega, args.scale_A, args.scale_V, scale_b, args.weights)

    def derived(self, z: dict, args: PseudoPosteriorArgs, store_weights: bool = False) -> dict:
        """Stored per draw: ``A`` (zero diagonal), ``V``, ``K0`` and, with fields, ``b`` and ``h0``.  The
        parameters are always stored (the sandwich adjustment maps them), so ``store_weights`` changes
        nothing."""
        p = pl_params(z, self.L)
        A, V = p.A[0], p.V[0]
        K0, h0 = gauged_couplings(A, V, p.b)
        out = {"A": A, "V": V, "K0": K0}
        if p.b is not None:
            out.update(b=p.b, h0=h0)
        return out


__all__ = ["PseudoPosteriorArgs", "PseudoPosteriorModel"]
