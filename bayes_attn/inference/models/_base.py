"""What every model shares: the traced arguments and the static description.

A model is split in two so that one compiled sampler serves many runs:

* a **static**, hashable description (:class:`Model` subclasses: heads, and the widths only where
  they set array shapes), used as a static argument of compiled functions;
* the **traced** :class:`ModelArgs`: widths/variances/temperature (:class:`~bayes_attn.network.Hyper`),
  path kernels, labels and, for the full weights, the path-propagated inputs.

``model.log_density(z, args)`` is NumPyro's own log joint of ``model.numpyro_model(args)``
(:func:`numpyro.infer.util.potential_energy`), so NUTS, MALA and ULA all sample the NumPyro model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import jax.numpy as jnp
from numpyro.infer.util import potential_energy

from ...network import Hyper, PathKernels


class ModelArgs(NamedTuple):
    """Traced inputs of a model (a JAX pytree): ``None`` entries are absent for that model.

    ``kernels``: the path kernels of a fixed attention (``None`` when the model computes them inside its
    density from ``inputs``, the tokens of the sampled-attention model).
    """

    hyper: Hyper
    kernels: PathKernels | None
    y: jnp.ndarray
    xpi_train: jnp.ndarray | None = None
    xpi_test: jnp.ndarray | None = None
    fixed: dict | None = None
    inputs: object | None = None

    def data_arrays(self) -> tuple:
        """The data arrays that determine a run of the model (for its checkpoint's fingerprint)."""
        if self.kernels is not None:
            arrays = (self.kernels.train.phi_a, self.kernels.phi_test)
        else:
            arrays = tuple(self.inputs)
        return (*arrays, self.y, self.xpi_train, *(self.fixed or {}).values())


class SampledModel:
    """What the chunked runner (:func:`bayes_attn.inference.run_chains`) and its samplers read of the static part
    of a model, and the one-liners every model kind shares: the attention-network models (:class:`Model`) and the
    Potts pseudo-posterior (:class:`bayes_attn.potts_bayes.PseudoPosteriorModel`).  Subclasses are frozen
    dataclasses (hashable: a static argument of compiled programs) and define the sites, the NumPyro model and
    the quantities stored per draw."""

    kind = "model"

    def site_shapes(self) -> dict[str, tuple[int, ...]]:
        """Latent sites in the order the NumPyro model samples them (NumPyro's init draws follow it)."""
        raise NotImplementedError

    def numpyro_model(self, args) -> None:
        raise NotImplementedError

    def derived(self, z: dict, args, store_weights: bool = False) -> dict:
        """Quantities stored per draw."""
        raise NotImplementedError

    def free_sites(self, args) -> dict[str, tuple[int, ...]]:
        """The sampled sites: :meth:`site_shapes` minus those ``args.fixed`` holds (arguments without a ``fixed``
        field hold none)."""
        fixed = getattr(args, "fixed", None) or {}
        return {k: s for k, s in self.site_shapes().items() if k not in fixed}

    def log_density(self, z: dict, args):
        """``ln p(z, y)`` of the NumPyro model (up to its constants): ``-potential_energy``."""
        return -potential_energy(self.numpyro_model, (args,), {}, z)


@dataclass(frozen=True)
class Model(SampledModel):
    """Static part of an attention-network model; subclasses define the NumPyro model, the sites and the stored
    quantities (symmetry-invariant, docs/theory.md §3, §7)."""

    heads: tuple[int, ...]

    def log_prior_and_likelihood(self, z: dict, args: ModelArgs):
        """``(ln p(z), ln p(y | z))``, whose sum is :meth:`log_density`: the density of the same model without its
        data (``data = False``) and the rest.  This default traces the model twice; models that can drop their data
        compute both from one pass (tempering evaluates them in every gradient, docs/samplers.md "Tempering")."""
        prior = replace(self, data=False).log_density(z, args)
        return prior, self.log_density(z, args) - prior


__all__ = ["SampledModel", "Model", "ModelArgs"]
