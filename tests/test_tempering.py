"""Replica-exchange NUTS (bayes_attn.inference.samplers.tempering): the swap rule and the ladder against their
definitions, and the sampler against the exact posterior of a bimodal model whose modes a single NUTS chain
cannot cross (with a planted error: no swaps, which must fail)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer.util import potential_energy
from scipy.stats import norm

from bayes_attn.inference import SamplerConfig, Settings, run_chains
from bayes_attn.inference.models import Model
from bayes_attn._exchange import round_trip_count
from bayes_attn.inference.samplers import tempering


def test_swaps_exchange_the_proposed_pairs_with_the_metropolis_probability():
    betas = jnp.array([1.0, 0.5, 0.2, 0.1, 0.01])
    lik = jnp.array([-3.0, -1.0, -7.0, -2.0, -40.0])
    for parity in (0, 1):
        perm, prob, proposed = tempering.swap(jax.random.PRNGKey(0), betas, lik, parity)
        np.testing.assert_array_equal(proposed, np.arange(4) % 2 == parity)
        # min(1, exp((beta_k - beta_k+1) (lik_k+1 - lik_k))): the tempered densities' ratio with the prior cancelled
        want = np.minimum(1.0, np.exp((np.asarray(betas[:-1]) - np.asarray(betas[1:])) * np.diff(np.asarray(lik))))
        np.testing.assert_allclose(prob, want, rtol=1e-12)
        perm = np.asarray(perm)
        assert sorted(perm) == list(range(5)) and np.all(perm[perm] == np.arange(5))  # a product of swaps
        for k in range(4):  # only proposed neighbours move
            if perm[k] != k:
                assert proposed[k] or proposed[k - 1]
    # acceptance frequencies over many keys follow the probabilities
    keys = jax.random.split(jax.random.PRNGKey(1), 4000)
    perms = jax.vmap(lambda k: tempering.swap(k, betas, lik, 0)[0])(keys)
    freq = np.mean(np.asarray(perms)[:, [0, 2]] == [1, 3], axis=0)
    p = np.asarray(tempering.swap(keys[0], betas, lik, 0)[1])[[0, 2]]
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / 4000) + 1e-9), (freq, p)


def test_round_trips_count_the_states_that_went_from_the_hottest_rung_to_the_coldest():
    """_exchange.round_trip_count along 400 rounds of random even-odd swaps, against each state's path over the rungs followed
    one by one: a trip ends when a state reaches rung 0 after having been at rung K - 1 since it last left rung 0."""
    K = 4
    betas = tempering.geometric_ladder(K, 0.05)
    labels, last_end, trips = jnp.arange(K, dtype=jnp.int32), jnp.full(K, -1, jnp.int8), jnp.asarray(0, jnp.int64)
    rung_of = {s: [s] for s in range(K)}  # state label -> its rung after every round
    keys = jax.random.split(jax.random.PRNGKey(5), 400)
    for t, key in enumerate(keys):
        lik = jax.random.normal(jax.random.fold_in(key, 1), (K,))  # swaps accepted often: states travel
        perm, _, _ = tempering.swap(key, betas, lik, t % 2)
        labels = labels[perm]
        last_end, trips = round_trip_count(labels, last_end, trips)
        for rung, s in enumerate(np.asarray(labels)):
            rung_of[int(s)].append(rung)
    want = 0
    for path in rung_of.values():
        hot = False
        for rung in path[1:]:
            if rung == K - 1:
                hot = True
            elif rung == 0 and hot:
                want, hot = want + 1, False
    assert want > 5  # the test has power: states made several trips
    assert int(trips) == want
    # the planted error, a count of every arrival at the coldest rung (the hottest not required), differs
    arrivals = sum(int(np.sum((np.asarray(p[1:]) == 0) & (np.asarray(p[:-1]) != 0))) for p in rung_of.values())
    assert arrivals > want


def test_the_equal_rejection_ladder():
    betas = tempering.geometric_ladder(6, 1e-3)
    np.testing.assert_allclose(betas, 1e-3 ** (np.arange(6) / 5), rtol=1e-12)
    # equal rejection everywhere: the geometric ladder stays (it is uniform in log beta)
    np.testing.assert_allclose(tempering.equal_rejection_ladder(betas, jnp.full(5, 0.3)), betas, rtol=1e-9)
    # unequal rejection: ends kept, monotone, and the interpolated cumulative rejection cut into equal parts
    rej = jnp.array([0.9, 0.1, 0.1, 0.1, 0.1])
    new = np.asarray(tempering.equal_rejection_ladder(betas, rej))
    assert new[0] == 1.0 and new[-1] == pytest.approx(1e-3) and np.all(np.diff(new) < 0)
    lam = np.concatenate([[0.0], np.cumsum(np.asarray(rej) + 1e-6)])
    at_new = np.interp(-np.log(new), -np.log(np.asarray(betas)), lam)
    np.testing.assert_allclose(np.diff(at_new), lam[-1] / 5, rtol=1e-9)
    assert new[1] > 0.5  # most of the rejection was between the first two rungs: they move together


def test_an_exchanged_states_potential_is_the_tempered_potential_at_its_new_rung():
    """exchanged_potential (from the state's old potential and the prior) against tempered_potential and its
    gradient computed at the new rung directly."""
    args = MixtureArgs(jnp.array([-2.0, 2.0]), jnp.log(jnp.array([0.7, 0.3])), jnp.asarray(0.2), jnp.asarray(2.0))
    model = Bimodal()
    z = {"x": jnp.array([[0.3], [1.7], [-2.2]])}
    b_from, b_to = jnp.array([1.0, 0.4, 0.05]), jnp.array([0.4, 1.0, 0.2])

    def vg(beta, zz):
        return jax.value_and_grad(lambda x: tempering.tempered_potential(model, x, args, beta))(zz)

    pe_from, g_from = jax.vmap(vg)(b_from, z)
    prior, g_prior = jax.vmap(lambda zz: tempering._prior_value_and_grad(model, zz, args))(z)
    pe, g = tempering.exchanged_potential(b_to, b_from, pe_from, g_from, prior, g_prior)
    want_pe, want_g = jax.vmap(vg)(b_to, z)
    np.testing.assert_allclose(pe, want_pe, rtol=1e-12)
    np.testing.assert_allclose(g["x"], want_g["x"], rtol=1e-12)


class MixtureArgs(NamedTuple):
    mu: jnp.ndarray  # (2,) the likelihood components' centres
    log_w: jnp.ndarray  # (2,) their log weights
    sigma: jnp.ndarray  # () their s.d.
    prior_sd: jnp.ndarray  # ()


@dataclasses.dataclass(frozen=True)
class Bimodal:
    """``x ~ N(0, prior_sd^2)``, likelihood ``sum_i w_i N(x; mu_i, sigma^2)``: the posterior is a two-component
    Gaussian mixture in closed form (:func:`exact`)."""

    data: bool = True
    label: str = ""  # a planted error's runs get their own compiled programs (the runner keys them by the model)
    kind = "bimodal"

    def site_shapes(self):
        return {"x": (1,)}

    def free_sites(self, args):
        return self.site_shapes()

    def numpyro_model(self, args):
        x = numpyro.sample("x", dist.Normal(0.0, args.prior_sd).expand([1]).to_event(1))[0]
        if self.data:
            numpyro.factor("lik", jax.nn.logsumexp(args.log_w + dist.Normal(args.mu, args.sigma).log_prob(x)))

    def log_density(self, z, args):
        return -potential_energy(self.numpyro_model, (args,), {}, z)

    log_prior_and_likelihood = Model.log_prior_and_likelihood  # the two-pass default

    def derived(self, z, args, store_weights=False):
        x = z["x"][0]
        return {"x": x, "right": (x > 0).astype(x.dtype)}


def exact(args: MixtureArgs) -> dict:
    """Posterior mean of ``x`` and of ``x > 0``: component ``i`` has precision ``1/s0^2 + 1/sigma^2``, mean
    ``(mu_i / sigma^2) / precision`` and mass ``propto w_i N(mu_i; 0, s0^2 + sigma^2)``."""
    mu, w, s, s0 = (np.asarray(a, float) for a in (args.mu, np.exp(args.log_w), args.sigma, args.prior_sd))
    prec = 1 / s0**2 + 1 / s**2
    mean, sd = mu / s**2 / prec, prec**-0.5
    mass = w * norm.pdf(mu, 0.0, np.sqrt(s0**2 + s**2))
    mass /= mass.sum()
    return {"x": float(mass @ mean), "right": float(mass @ norm.sf(0.0, mean, sd))}


def test_every_replica_keeps_the_potential_and_gradient_of_its_state_at_its_rung():
    """After every transition, exchange and the ladder's move (iteration 20 of a 40-iteration warm-up), the potential
    and gradient each replica's NUTS state carries are those of its position at its current beta: NUTS starts its
    next trajectory from them, so a stale one would bias the draws."""
    from bayes_attn.inference.samplers import Settings as S

    args = MixtureArgs(jnp.array([-2.0, 2.0]), jnp.log(jnp.array([0.7, 0.3])), jnp.asarray(0.2), jnp.asarray(2.0))
    model = Bimodal(label="invariant")
    settings = S(40, 0.8, 10, False, None, 0.1, False, 5, 0.005)
    prog = tempering.program(model, settings)
    carry = prog.init(jax.random.PRNGKey(0), args, {"x": jnp.array([2.0])})
    step = jax.jit(prog.step)
    start = np.asarray(carry.betas)
    for t in range(25):
        carry, _ = step(jax.random.PRNGKey(t + 1), carry, args)
        want_pe, want_g = jax.vmap(
            jax.value_and_grad(lambda z, b: tempering.tempered_potential(model, z, args, b)), in_axes=(0, 0)
        )(carry.states.z, carry.betas)
        np.testing.assert_allclose(carry.states.potential_energy, want_pe, rtol=1e-9, atol=1e-9, err_msg=str(t))
        np.testing.assert_allclose(carry.states.z_grad["x"], want_g["x"], rtol=1e-9, atol=1e-9, err_msg=str(t))
    assert not np.allclose(np.asarray(carry.betas), start)  # the ladder moved (at iteration 20)


def _run(kind: str, args: MixtureArgs, start: float, label: str = ""):
    cfg = SamplerConfig(
        kind=kind,
        model="order_parameters",  # the runner reads only the run's shape from it; the model is Bimodal
        chains=4,
        warmup=300,
        draws=1500,
        seed=3,
        progress_bar=False,
        checkpoint_every=1500,
        replicas=6,
        beta_min=0.005,
        dense_mass=False,
    )
    positions = {"x": jnp.full((4, 1), start)}
    return run_chains(kind, Bimodal(label=label), args, cfg, Settings.from_config(cfg), fp="", positions=positions)


def _mcse(draws: np.ndarray) -> float:
    import arviz as az

    return float(az.mcse(draws, method="mean"))


@pytest.mark.slow  # a statistical test (three compiled runs); the invariants above run in the fast suite
def test_tempering_weighs_modes_a_single_chain_cannot_cross(monkeypatch):
    """Modes at -2 and +2 (weights 0.7 / 0.3) with a barrier of about 50 nats at x = 0; every chain starts in the
    lighter mode.  Tempered chains reach the exact mean of x and of x > 0 within 5 MCSE; the sampler with its swaps
    switched off (the planted error) stays where it started."""
    args = MixtureArgs(jnp.array([-2.0, 2.0]), jnp.log(jnp.array([0.7, 0.3])), jnp.asarray(0.2), jnp.asarray(2.0))
    want = exact(args)
    assert want["right"] == pytest.approx(0.3, abs=1e-6)
    out = _run("tempering", args, 2.0)
    post, stats = out["posterior"], out["sample_stats"]
    for name, value in want.items():
        draws = np.asarray(post[name])
        err = abs(draws.mean() - value) / _mcse(draws)
        assert err < 5, (name, draws.mean(), value, err)
    assert 0.2 < float(np.mean(stats["swap_rate"])) <= 1.0
    assert int(np.sum(stats["diverging"])) == 0
    # every pair swaps (the ladder moved to equal rejection), and every chain's states made round trips
    assert np.asarray(stats["pair_swap_rate"]).shape[-1] == 5 and np.all(np.mean(stats["pair_swap_rate"], (0, 1)) > 0.1)
    assert np.asarray(stats["ladder"]).shape[-1] == 6 and np.all(np.asarray(stats["ladder"])[..., 0] == 1.0)
    assert np.all(np.asarray(stats["round_trips"])[:, -1] > 0)
    # the planted error: the same sampler with its exchanges switched off stays where it started (as a lone NUTS
    # chain does)
    never = lambda key, b, lik, parity: (  # noqa: E731
        jnp.arange(b.shape[0]),
        jnp.zeros(b.shape[0] - 1),
        jnp.arange(b.shape[0] - 1) % 2 == parity,
    )
    monkeypatch.setattr(tempering, "swap", never)
    planted = _run("tempering", args, 2.0, label="planted")
    draws = np.asarray(planted["posterior"]["right"])
    assert draws.mean() > 0.99, draws.mean()
    assert np.all(np.asarray(planted["sample_stats"]["round_trips"]) == 0)  # no exchange, no trip
