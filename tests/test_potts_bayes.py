"""NumPyro pseudo-posterior of factored attention (potts.md §11.1)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer.util import log_density

import bayes_attn  # noqa: F401
from bayes_attn.potts import (FAConfig, Potts, PseudoPosterior, exact_distribution, fit_lbfgs, generate_couplings,
                              map_lambda, pl_model, sandwich_omega)


def _data(M=400, seed=0):
    J, U = generate_couplings("G1", 3, 3, seed=seed)
    m = Potts(2.0 * J, U, 1.0)
    st, p = exact_distribution(m)
    return m, st[np.random.default_rng(seed).choice(len(p), M, p=p)]


def test_map_is_ridge_pl():
    """The gradient of the pseudo-posterior log density vanishes at the ridge-PL fit with
    lam = 1 / (2 s^2 omega M L) (MAP = trained factored attention)."""
    m, s = _data()
    omega, scale = 0.5, 0.7
    lam = map_lambda(len(s), 3, omega, scale)
    p, info = fit_lbfgs(jax.random.PRNGKey(0), s, FAConfig(3, 3), lam, tol=1e-9)
    assert info.converged
    z = {"A_off": p["A"][0][~np.eye(3, dtype=bool)], "V": p["V"][0]}
    g = jax.grad(lambda z: log_density(pl_model, (jnp.asarray(s), 3, 3, omega, scale, scale), {}, z)[0])(z)
    scale_g = len(s) * 3 * omega
    assert max(float(jnp.abs(v).max()) for v in g.values()) < 1e-6 * scale_g
    g_far = jax.grad(lambda z: log_density(pl_model, (jnp.asarray(s), 3, 3, omega, scale, scale), {}, z)[0])(
        jax.tree.map(lambda x: 1.1 * x, z))
    assert max(float(jnp.abs(v).max()) for v in g_far.values()) > 1e-3


@pytest.mark.slow  # 55 s: a calibration study over replicas, in ./run.sh test-all
@pytest.mark.xfail(strict=True, reason="measured: the pseudo-posterior's 90 % intervals under-cover at L = C = 3, "
                   "omega = 1 and sandwich-adjusted alike (docs/potts_results.md section 4)")
def test_calibration_L3_nominal_90_percent_covers_truth():
    """Calibration that can fail: on data from known couplings (L = C = 3, fields, exact samples),
    the nominal 90 % credible intervals of the gauged couplings at the magnitude-adjusted omega
    cover the truth at 0.9 within 3 binomial s.e.  Over-concentrated intervals (e.g. half the
    width) would cover ~0.6 and fail.  It does fail today (strict xfail: a fix turns it into an
    unexpected pass that must be acknowledged by removing the marker)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
    from potts_bayes import calibrate_small

    res = calibrate_small(reps=3, M=300, warmup=80, draws=150, omegas=("adjusted",))
    c = res["coverage"]["adjusted"]
    assert c["n_dof"] == 3 * 3 * 4
    assert abs(c["rate"] - 0.9) <= 3 * np.sqrt(0.9 * 0.1 / c["n_dof"]), c
    assert all(0.2 < w < 5 for w in res["omegas"])


@pytest.mark.slow
def test_calibration_L20_reported_with_binomial_error():
    """L = C = 20 counterpart (slow): coverage of the 90 % intervals of the gauged couplings on G2 +
    consensus-field data (beta fixed, no tuning) within 3 binomial s.e. of 0.9."""
    from bayes_attn.potts import SampleConfig, coverage, make_dataset

    d = make_dataset(SampleConfig(L=20, C=20, consensus=1.0, field_sigma=0.5, beta=1.5, M=1000, n_val=10,
                                  n_test=10, rungs=6, systems=500, burn_sweeps=300, check_other=False))
    s = d["sequences"]
    m = Potts(d["J"], d["U"], float(d["beta"]), d["h"])
    fp, _ = fit_lbfgs(jax.random.PRNGKey(0), s, FAConfig(20, 20, bias=True), map_lambda(1000, 20))
    om = sandwich_omega(s, fp, scale_b=3.0)
    out = PseudoPosterior(20, 20, omega=om["omega"], scale_b=3.0, chains=1, warmup=150, draws=150,
                          max_tree_depth=6).run(jax.random.PRNGKey(1), s, init=fp)
    c = coverage(out["K0"], m.beta, m.J, m.U)
    assert abs(c["rate"] - 0.9) <= 3 * c["binom_se"] + 0.02, c
