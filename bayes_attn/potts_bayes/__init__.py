"""Bayesian factored attention sampled through the package's runner (docs/potts.md §11.1).

The pseudo-posterior ``omega log PL(A, V, b) + log prior`` of single-head factored attention, its NumPyro
model and its mathematics (the MAP weight, the sandwich adjustments, coverage) live in
:mod:`bayes_attn.potts`; this layer samples it.  :class:`PseudoPosterior` (and
:func:`sample_pseudo_posterior`) run NUTS through :func:`bayes_attn.inference.run_chains`, with the progress
bar, the checkpoint after every chunk, the exact resume and the ArviZ DataTree of every other run, and judge
the draws with :func:`bayes_attn.diagnostics.summarize` on the gauge-fixed couplings ``K0``.

Where it sits (README, "Architecture"): it needs ``potts`` (the model), ``inference`` (the runner and NUTS)
and ``diagnostics`` (the verdict), so it is a layer above ``diagnostics``, beside ``sweep`` and below the
command line.  Making it a model of :mod:`bayes_attn.inference.models` instead would not let a run be judged
by ``summarize``, which lives a layer above ``inference``, and ``potts`` itself sits below both.
"""

from ._model import *  # noqa: F401,F403
from ._model import __all__ as _a0
from ._run import *  # noqa: F401,F403
from ._run import __all__ as _a1

__all__ = sorted({*_a0, *_a1})
