"""bayes_attn: Bayesian inference in attention-path networks and its finite-width theory.

Importing the package switches JAX to float64 (``jax_enable_x64``): the collapsed
likelihood, the theory and the exact samplers need it (docs/design.md).
"""

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from ._errors import ConfigWarning, InputError  # noqa: E402
from ._version import __version__  # noqa: E402

__all__ = ["InputError", "ConfigWarning", "__version__"]
