"""The sampler protocol: the per-chain :class:`Program` a sampler builds (its registry record,
:class:`~bayes_attn.config.Sampler`, lives in :mod:`bayes_attn.config`).

Every algorithm lives in its own module with blackjax's shape (``State``/``Info`` NamedTuples,
pure ``init`` and ``build_kernel``) and a ``program(model, settings)`` that wraps them for the
driver.  A :class:`Program` is a set of pure **per-chain** functions; the runner
(:mod:`bayes_attn.inference._runner`) maps them over chains, chunks the run, stores the
derived quantities, checkpoints and resumes.  Every function takes the model's traced
:class:`~bayes_attn.inference.models.ModelArgs`, so one compiled program serves every run with the
same shapes.

Sample statistics use one set of names across samplers, those of ArviZ's ``sample_stats``
(:data:`STATS`); each sampler documents what its entries mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

#: sample-statistics names (ArviZ conventions) and what they mean
STATS = {
    "lp": "log density of the sampled model at the draw (up to a constant)",
    "acceptance_rate": "Metropolis acceptance probability of the transition (per sampler, see its module)",
    "step_size": "integrator / Langevin step size",
    "diverging": "a divergent transition (non-finite or very large energy error / a failed Cholesky)",
    "n_steps": "work per iteration: leapfrog steps (NUTS), gradient evaluations (MALA, ULA) or "
    "P x P Gram solves (Gibbs); summed over thinned iterations",
    "tree_depth": "NUTS tree depth",
    "energy": "Hamiltonian at the draw (NUTS; E-BFMI)",
    "swap_rate": "mean acceptance probability of the replica swaps proposed at the iteration (tempering)",
    "pair_swap_rate": "acceptance probability of a swap between each neighbouring pair of rungs at the iteration, "
    "proposed or not (tempering; dimension pair)",
    "round_trips": "round trips (hottest rung, then coldest) the chain's states completed so far (tempering)",
    "ladder": "the betas of the rungs, coldest first (tempering; dimension rung)",
}


class Program(NamedTuple):
    """Per-chain pure functions of a sampler.

    ``init(key, args, position, inverse_mass_matrix) -> carry`` (``position``: a dict of sites
    or ``None`` for the sampler's default start; ``inverse_mass_matrix``: a fixed NUTS metric or
    ``None``); ``step(key, carry, args) -> (carry, stats)``: one transition, in warm-up and in sampling alike
    (the carry says which: NUTS counts its iterations, the Langevin samplers carry a ``tuning`` flag, Gibbs
    has nothing to tune), so the runner compiles one step program per run; during warm-up its statistics
    (those of sampling, at the step size being tuned) become ArviZ's ``warmup_sample_stats``;
    ``end_warmup(key, carry, args) -> carry``: fix what warm-up tuned; ``position(carry, args) -> dict`` of
    model sites; ``reduce``: per stat, how a thinning block is summarised (``"sum"``, ``"any"``, ``"last"``;
    default ``"last"``).
    """

    init: Callable
    step: Callable
    end_warmup: Callable
    position: Callable
    reduce: dict


@dataclass(frozen=True)
class Settings:
    """The sampler settings a program is built from (hashable: part of the compiled program's key)."""

    warmup: int
    target_accept: float
    max_tree_depth: int
    dense_mass: bool
    step_size: float | None
    ula_step_factor: float
    fixed_metric: bool = False
    replicas: int = 8
    beta_min: float = 0.01

    @classmethod
    def from_config(cls, cfg, fixed_metric: bool = False) -> "Settings":
        return cls(
            cfg.warmup,
            float(cfg.target_accept),
            cfg.max_tree_depth,
            cfg.dense_mass,
            cfg.step_size,
            float(cfg.ula_step_factor),
            fixed_metric,
            cfg.replicas,
            float(cfg.beta_min),
        )


__all__ = ["STATS", "Program", "Settings"]
