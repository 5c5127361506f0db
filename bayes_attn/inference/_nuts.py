"""NUTS on the full or collapsed model (NumPyro), storing only derived quantities."""

from __future__ import annotations

import jax
import numpy as np
from numpyro.infer import MCMC, NUTS

from ._config import SamplerConfig
from ._devices import chain_method
from ._models import BuiltModel, weights_from_latent

_EXTRA = ("diverging", "energy", "num_steps", "accept_prob", "potential_energy", "adapt_state.step_size")


def _postprocess(built: BuiltModel, store_weights: bool):
    def fn(z):
        out = dict(built.derived(z))
        if store_weights:
            V0, values, a = weights_from_latent(built.spec, z)
            if V0 is not None:
                out["V0"] = V0
            for l, V in enumerate(values, start=1):
                out[f"V{l}"] = V
            out["a"] = a
        return out

    return fn


def run_nuts(built: BuiltModel, cfg: SamplerConfig):
    """Run NUTS; return ``(posterior, sample_stats)`` dicts of ``(chain, draw, ...)`` arrays."""
    kernel = NUTS(built.model, target_accept_prob=cfg.target_accept, max_tree_depth=cfg.max_tree_depth,
                  dense_mass=cfg.dense_mass)
    mcmc = MCMC(kernel, num_warmup=cfg.warmup, num_samples=cfg.draws, num_chains=cfg.chains,
                thinning=cfg.thinning, chain_method=chain_method(cfg.chains, cfg.chain_method), progress_bar=cfg.progress_bar,
                postprocess_fn=_postprocess(built, cfg.store_weights))
    mcmc.run(jax.random.PRNGKey(cfg.seed), extra_fields=_EXTRA)
    posterior = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    ex = {k: np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    n_steps = ex["num_steps"].astype(np.int64)
    stats = {
        "diverging": ex["diverging"].astype(bool),
        "energy": ex["energy"],
        "lp": -ex["potential_energy"],
        "acceptance_rate": ex["accept_prob"],
        "n_steps": n_steps,
        "tree_depth": np.floor(np.log2(np.maximum(n_steps, 1))).astype(np.int64) + 1,
        "step_size": ex["adapt_state.step_size"],
        "n_grad_evals": n_steps,
    }
    return posterior, stats


__all__ = ["run_nuts"]

