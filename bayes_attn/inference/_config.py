"""Sampler configuration (the ``[sampler]`` table of a run config)."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import nonnegative_int, one_of, positive, require

#: sampler kinds understood by :func:`bayes_attn.inference.sample`
KINDS = ("nuts",)


@dataclass(frozen=True)
class SamplerConfig:
    """How to sample a posterior.

    ``warmup`` and ``draws`` are per chain; ``thinning`` keeps every k-th draw (``draws`` is
    the number of iterations after warm-up, so ``draws // thinning`` are stored).
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
    target_accept: float = 0.8
    max_tree_depth: int = 10
    dense_mass: bool = False

    def __post_init__(self):
        one_of(self.kind, KINDS, "sampler.kind")
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
        positive(self.target_accept, "sampler.target_accept")
        require(self.target_accept < 1, "sampler.target_accept", f"must be < 1, got {self.target_accept}")
        positive(self.max_tree_depth, "sampler.max_tree_depth", integer=True)
