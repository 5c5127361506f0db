"""The sampler registry (bayes_attn.config.REGISTRY): the one place that says what a sampler serves;
the configuration's kinds and model checks and the driver's inputs come from it; adding a sampler is one module
(here: a function) plus one ``register`` line (README, "How to add a sampler"); reading it loads no kernel."""

from __future__ import annotations

import subprocess
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task

from bayes_attn import InputError
from bayes_attn.inference import KINDS, SAMPLER_MODELS, SamplerConfig, sample
from bayes_attn.inference.samplers import REGISTRY, Program, Sampler, register


def test_derived_tables_follow_the_records():
    assert KINDS == tuple(REGISTRY) and set(KINDS) == {"nuts", "mala", "ula", "gibbs", "tempering"}
    assert SAMPLER_MODELS == {name: s.models for name, s in REGISTRY.items()}
    assert [name for name, s in REGISTRY.items() if s.path_inputs] == ["gibbs"]  # the driver's only special input


def test_reading_configs_loads_no_kernel():
    code = (
        "import sys\nfrom bayes_attn.inference import SamplerConfig\n"
        "SamplerConfig(kind='gibbs', model='collapsed'); SamplerConfig(kind='nuts')\n"
        "print(sorted(m for m in ('numpyro', 'blackjax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


class _Carry(NamedTuple):
    x: jnp.ndarray
    lp: jnp.ndarray


def _random_walk_program(model, settings) -> Program:
    """A toy random-walk Metropolis sampler on the model's flat sites (the test's 'new sampler')."""
    from jax.flatten_util import ravel_pytree

    from bayes_attn.inference.samplers._adapt import flat_logdensity

    def init(key, args, position=None, inverse_mass_matrix=None):
        logd, _, dim = flat_logdensity(model, args)
        x = 0.1 * jax.random.normal(key, (dim,)) if position is None else ravel_pytree(position)[0]
        return _Carry(x, logd(x))

    def step(key, c, args):
        logd = flat_logdensity(model, args)[0]
        k_move, k_accept = jax.random.split(key)
        y = c.x + 0.05 * jax.random.normal(k_move, c.x.shape)
        lp_y = logd(y)
        accept = jnp.minimum(1.0, jnp.exp(lp_y - c.lp))
        ok = jax.random.uniform(k_accept) < accept
        c = _Carry(jnp.where(ok, y, c.x), jnp.where(ok, lp_y, c.lp))
        return c, {
            "lp": c.lp,
            "acceptance_rate": accept,
            "diverging": ~jnp.isfinite(lp_y),
            "n_steps": jnp.asarray(1, jnp.int64),
        }

    return Program(
        init,
        step,
        lambda k, c, a: c,
        lambda c, a: flat_logdensity(model, a)[1](c.x),
        {"diverging": "any", "n_steps": "sum"},
    )


def test_a_registered_sampler_runs_through_the_runner():
    register(
        Sampler("toy_rwm", _random_walk_program, ("lp", "acceptance_rate", "diverging", "n_steps"), ("collapsed",))
    )
    try:
        task = random_task(P=5, Q=3, S=2, n0=3, heads=(1,), seed=1)
        spec = task.spec(width=3, temperature=0.5)
        dt = sample(
            task,
            spec,
            SamplerConfig(
                kind="toy_rwm",
                model="collapsed",
                chains=2,
                warmup=4,
                draws=6,
                checkpoint_every=4,
                seed=0,
                progress_bar=False,
            ),
        )
        assert dt["posterior"]["f"].shape == (2, 6, 3) and np.all(np.isfinite(dt["posterior"]["f"].values))
        stats = dt["sample_stats"]
        assert set(stats.data_vars) == {"lp", "acceptance_rate", "diverging", "n_steps"}
        assert np.all((stats["acceptance_rate"].values >= 0) & (stats["acceptance_rate"].values <= 1))
        assert int(dt["warmup_sample_stats"]["n_steps"].values.sum()) == 2 * 4  # one evaluation per iteration
        with pytest.raises(InputError, match="model.kind: the toy_rwm sampler cannot sample model 'weights'"):
            SamplerConfig(kind="toy_rwm", model="weights")
    finally:
        REGISTRY.pop("toy_rwm", None)
    with pytest.raises(InputError, match="sampler.kind"):
        SamplerConfig(kind="toy_rwm", model="collapsed")
