"""Sampler configuration (the ``[sampler]`` table of a run config)."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import nonnegative_int, one_of, positive, require
from ._devices import CHAIN_METHODS

#: sampler kinds understood by :func:`bayes_attn.inference.sample`
KINDS = ("nuts", "mala", "ula", "gibbs", "wishart")

#: target acceptance when ``target_accept`` is not given: NUTS (NumPyro default) and MALA
#: (0.574, Roberts & Rosenthal 1998, optimal scaling of MALA)
DEFAULT_TARGET_ACCEPT = {"mala": 0.574}

#: where chains start: NumPyro's ``init_to_uniform`` in the sampled coordinates, or (wishart
#: only) the theory's saddle point (docs/wishart.md, "Starting at the saddle point")
INITS = ("uniform", "theory")


@dataclass(frozen=True)
class SamplerConfig:
    """How to sample a posterior.

    ``warmup`` and ``draws`` are per chain; ``thinning`` keeps every k-th draw (``draws`` is
    the number of iterations after warm-up, so ``draws // thinning`` are stored).

    Langevin / Gibbs options (ignored by NUTS; see docs/samplers.md):

    * ``target_accept``: NUTS 0.8 and MALA 0.574 when not given (``None``).
    * ``step_size``: initial MALA step size; ``None`` = ``1 / lambda_max`` of the potential's
      Hessian at the initial point (power iteration).
    * ``ula_step_factor``: ULA step-size rule ``h = ula_step_factor / lambda_max`` with
      ``lambda_max`` the largest Hessian eigenvalue of the potential at the end of warm-up.
    * ``dense_mass`` (NUTS and wishart): adapt a dense mass matrix; ``None`` = true for
      ``wishart`` (halves the leapfrog steps per draw at N = 1000, docs/wishart.md), false
      for the weight-space models (their dimension grows like N^2).
    * ``chain_method`` (every kind): ``"auto"`` (vectorized on CPU, ``pmap`` on
      accelerators), ``"vectorized"``, ``"parallel"`` or ``"sequential"``; see
      :func:`bayes_attn.inference.chain_method`.
    * ``init`` (wishart only besides the default): ``"uniform"`` (NumPyro's
      ``init_to_uniform``, sites in ``[-2, 2]``) or ``"theory"``: every chain starts at the
      saddle point ``U*`` of theory.md §4.3 plus an independent ``U(-1, 1)`` jitter per site
      (one posterior s.d. in the width-scaled sites, so R-hat still sees dispersed starts),
      with the Laplace metric ``(-H)^-1`` at ``U*`` as a fixed mass matrix.
    * ``checkpoint_every``: stored draws per chunk (the checkpoint / progress granularity of
      the chunked samplers ``mala``, ``ula``, ``gibbs``).
    """

    kind: str = "nuts"
    collapsed: bool = False
    chains: int = 4
    warmup: int = 500
    draws: int = 500
    thinning: int = 1
    seed: int = 0
    store_weights: bool = False
    progress_bar: bool = True
    target_accept: float | None = None
    max_tree_depth: int = 10
    dense_mass: bool | None = None
    step_size: float | None = None
    ula_step_factor: float = 0.1
    checkpoint_every: int = 100
    chain_method: str = "auto"
    init: str = "uniform"

    def __post_init__(self):
        one_of(self.kind, KINDS, "sampler.kind")
        one_of(self.chain_method, CHAIN_METHODS, "sampler.chain_method")
        one_of(self.init, INITS, "sampler.init")
        require(self.init == "uniform" or self.kind == "wishart", "sampler.init",
                f"'theory' starts the order-parameter chain (kind = \"wishart\"), not kind = {self.kind!r}")
        if self.dense_mass is None:  # wishart: 14-150 correlated dimensions, a dense metric pays
            object.__setattr__(self, "dense_mass", self.kind == "wishart")
        for name in ("collapsed", "store_weights", "progress_bar", "dense_mass"):
            require(isinstance(getattr(self, name), bool), f"sampler.{name}",
                    f"must be true or false, got {getattr(self, name)!r}")
        positive(self.chains, "sampler.chains", integer=True)
        nonnegative_int(self.warmup, "sampler.warmup")
        positive(self.draws, "sampler.draws", integer=True)
        positive(self.thinning, "sampler.thinning", integer=True)
        require(self.draws // self.thinning >= 1, "sampler.thinning",
                f"thinning {self.thinning} keeps no draw out of {self.draws}")
        nonnegative_int(self.seed, "sampler.seed")
        require(not (self.kind == "wishart" and self.store_weights), "sampler.store_weights",
                "the wishart sampler samples order parameters, not weights; set it to false")
        if self.target_accept is None:
            object.__setattr__(self, "target_accept", DEFAULT_TARGET_ACCEPT.get(self.kind, 0.8))
        positive(self.target_accept, "sampler.target_accept")
        require(self.target_accept < 1, "sampler.target_accept", f"must be < 1, got {self.target_accept}")
        positive(self.max_tree_depth, "sampler.max_tree_depth", integer=True)
        if self.step_size is not None:
            positive(self.step_size, "sampler.step_size")
        positive(self.ula_step_factor, "sampler.ula_step_factor")
        require(self.ula_step_factor < 2, "sampler.ula_step_factor",
                f"must be < 2 (Euler-Maruyama is unstable beyond 2 / lambda_max), got {self.ula_step_factor}")
        positive(self.checkpoint_every, "sampler.checkpoint_every", integer=True)
