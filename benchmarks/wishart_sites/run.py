#!/usr/bin/env python
"""Centred vs non-centred sites of the order-parameter chain (docs/theory.md eq. (5.2f), docs/wishart.md).

NUTS (NumPyro ``MCMC``, dense metric, 4 vectorized chains) on the Markov 4-path problem at small width, once
with the package's non-centred (Bartlett) sites and once with the centred sites the package used before
0.2.0 (``xi_l = sqrt(N_l) (theta_l - theta_GP)``, ``theta_l`` the log-Cholesky parameters of ``U_l``
itself; re-implemented here as the reference).  Same density in both, only the coordinates differ.
Writes ``benchmarks/wishart_sites/results.json``: divergences after warm-up, median leapfrog steps, the
adapted step sizes, the wall time, and where the divergences sat (min site value of ``xi_2`` and ``xi_a``).

    .venv/bin/python benchmarks/wishart_sites/run.py [--draws 20000] [--data-draws 0]   # ~1 min (prior only)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def centred_unpack(layout, xi, hyper):
    """The pre-0.2.0 sites: ``theta_l = theta_GP + xi_l / sqrt(N_l)`` for every layer independently."""
    import jax.numpy as jnp
    from bayes_attn.linalg import cholesky_factor, cholesky_log_jacobian, cholesky_theta, tril_size

    s = hyper.sigma2_readout
    centre = []
    for l in range(layout.n_layers, 0, -1):
        s = s * hyper.sigma2_layers[l - 1]
        centre.append(cholesky_theta(s * jnp.eye(layout.sizes[l - 1])))
    centre = centre[::-1]
    N_a = hyper.widths[-1]
    theta_a = jnp.log(hyper.sigma2_readout) + xi["xi_a"] / jnp.sqrt(N_a)
    log_jac = theta_a - 0.5 * jnp.log(N_a)
    Us = []
    for l, p in enumerate(layout.sizes, start=1):
        N = hyper.widths[l - 1]
        theta = centre[l - 1] + xi[f"xi_{l}"] / jnp.sqrt(N)
        L = cholesky_factor(theta, p)
        Us.append(L @ L.T)
        log_jac = log_jac + cholesky_log_jacobian(theta, p) - 0.5 * tril_size(p) * jnp.log(N)
    return jnp.exp(theta_a), Us, log_jac


def run_case(sites: str, width: int, temperature: float, data: bool, warmup: int, draws: int, seed: int) -> dict:
    import jax
    import numpy as np
    import numpyro
    from numpyro.infer import MCMC, NUTS

    from bayes_attn.inference import parse_config
    from bayes_attn.inference.models import build_model
    from bayes_attn.inference.models._order_parameters import _flat_site
    from bayes_attn.theory import energy, prior_log_density

    raw = {
        "data": {"task": "markov", "P": 100, "n_test": 200, "paths": 4},
        "network": {"width": width, "readout": "last", "temperature": temperature},
        "model": {"kind": "order_parameters"},
    }
    cfg = parse_config(raw, ROOT)
    task = cfg.task()
    spec = cfg.spec(task)
    model, args = build_model(task, spec, "order_parameters", data=data)
    layout = model.layout
    unpack = layout.unpack if sites == "noncentred" else (lambda xi, h: centred_unpack(layout, xi, h))

    def numpyro_model(a):
        xi = {name: numpyro.sample(name, _flat_site(shape)) for name, shape in layout.site_shapes().items()}
        U_a, Us, log_jac = unpack(xi, a.hyper)
        lp = prior_log_density(U_a, Us, a.hyper) + log_jac
        if data:
            lp = lp - 0.5 * energy(Us[0], a.kernels.train, a.y, a.hyper.temperature)
        numpyro.factor("log_density", lp)

    mcmc = MCMC(
        NUTS(numpyro_model, dense_mass=True),
        num_warmup=warmup,
        num_samples=draws,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    t0 = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), args, extra_fields=("diverging", "num_steps", "adapt_state.step_size"))
    wall = time.perf_counter() - t0
    ex = mcmc.get_extra_fields(group_by_chain=True)
    div = np.asarray(ex["diverging"])
    post = mcmc.get_samples(group_by_chain=True)
    where = {k: float(np.min(np.asarray(post[k])[div])) for k in ("xi_2", "xi_a")} if div.any() else {}
    return {
        "sites": sites,
        "width": width,
        "temperature": temperature,
        "data": data,
        "chains": 4,
        "warmup": warmup,
        "draws": draws,
        "seed": seed,
        "divergences": int(div.sum()),
        "median_steps": float(np.median(np.asarray(ex["num_steps"]))),
        "step_size": [float(x) for x in np.asarray(ex["adapt_state.step_size"])[:, -1]],
        "min_site_at_divergence": where,
        "wall_s": wall,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=10)
    ap.add_argument("--draws", type=int, default=20000, help="kept draws per chain, prior-only runs")
    ap.add_argument("--data-draws", type=int, default=0, help="kept draws per chain with the Markov data (0: skip)")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "wishart_sites" / "results.json"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import bayes_attn  # noqa: F401  (float64)

    cases = [(False, args.draws)] + ([(True, args.data_draws)] if args.data_draws else [])
    rows = []
    for data, draws in cases:
        for sites in ("centred", "noncentred"):
            r = run_case(sites, args.width, 0.1, data, args.warmup, draws, seed=0)
            print(json.dumps(r))
            rows.append(r)
    out = {
        "writer": "benchmarks/wishart_sites/run.py",
        "task": "markov 4-path, P = 100",
        "dense_mass": True,
        "host": os.uname().nodename,
        "cases": rows,
    }
    tmp = Path(args.out).with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
