"""Device benchmark: the runs that need an accelerator, in one short script (<= 8 minutes on one GPU).

* ``nuts_full``: NUTS on every weight, Markov 4-path task, P = 100, N = 100, T = 0.01, 4 chains x (100 + 100);
* ``wishart_1e5``: NUTS on the order parameters at N = 10^5, 4 chains x (500 + 1000);
* ``gibbs_64``: exact blocked Gibbs, N = 1000, 64 chains x (50 + 300) sweeps;
* ``digits_theory``: the 16-path theory (L = 2, H = 4, P = 600 digits episodes) at N = 10, 100, 1000, 10^4;
* ``nuts_full_f32``, ``wishart_1e5_f32``: the first two in ``[sampler] precision = "float32"``.

Every sampled case shards its chains over the devices present (``chain_method = "parallel"``: a ``chain``
device mesh, as many devices as divide the chains; one GPU runs them vectorized); each case records the layout.

Each case records wall time (incl. compilation), the first-chunk time (compilation + one chunk), the
device, minimum bulk ESS and maximum R-hat over the invariant quantities, and ESS per second, in the
same units as ``benchmarks/samplers/results.json``.  ``--smoke`` runs tiny versions on the CPU (the
test suite does, so the script cannot rot); a GPU run is ``bash benchmarks/device/run.sh``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path


def _diag(dt) -> dict:
    from bayes_attn.diagnostics import summarize

    rep = summarize(dt)
    return {
        "max_rhat": rep.max_rhat,
        "min_ess_bulk": rep.min_ess_bulk,
        "divergences": rep.divergences,
        "passed": rep.passed,
    }


def sample_case(name, task, spec, cfg) -> dict:
    from bayes_attn.inference import sample

    t0 = time.perf_counter()
    dt = sample(task, spec, cfg)
    wall = time.perf_counter() - t0
    from bayes_attn.inference import chain_layout

    out = {
        "case": name,
        "wall_s": wall,
        "sampling_s": float(dt.attrs["wall_time_s"]),
        "chains": cfg.chains,
        "devices": chain_layout(cfg.chains, cfg.chain_method, cfg.devices).devices,
        "precision": cfg.precision,
        "warmup": cfg.warmup,
        "draws": cfg.draws,
        "width": list(spec.widths),
        "model": cfg.model,
        "sampler": cfg.kind,
        **_diag(dt),
    }
    out["ess_per_s"] = out["min_ess_bulk"] / wall
    return out


def theory_case(task, widths) -> dict:
    from bayes_attn.theory import solve

    spec = task.spec(width=widths[0], temperature=0.5, readout="mean")
    phi = task.phi("train", spec)
    times, ok = [], []
    for N in widths:
        t0 = time.perf_counter()
        sol = solve(spec.with_(width=N), phi, task.y_train, warn=False)
        times.append(time.perf_counter() - t0)
        ok.append(bool(sol.status.ok))
    return {
        "case": "digits_theory",
        "widths": list(widths),
        "solve_s": times,
        "converged": ok,
        "paths": spec.n_paths,
        "P": task.n_train,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, on whatever device is present (tests)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    ap.add_argument(
        "--cases",
        nargs="+",
        default=["nuts_full", "wishart_1e5", "gibbs_64", "digits_theory", "nuts_full_f32", "wishart_1e5_f32"],
    )
    args = ap.parse_args(argv)
    chains = 2 if args.smoke else 64
    from bayes_attn.inference import request_host_devices

    request_host_devices(4)
    import jax
    import numpy as np

    from bayes_attn.inference import SamplerConfig
    from bayes_attn.network import HeadLayer
    from bayes_attn.tasks import digits_episodes, markov_task

    s = args.smoke
    markov = markov_task(P=10 if s else 100, n_test=20 if s else 1000, paths=4)
    results = {
        "meta": {
            "smoke": s,
            "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()],
            "platform": platform.platform(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        },
        "cases": [],
    }
    runs = {  # name: (task, spec, sampler settings)
        "nuts_full": (
            markov,
            markov.spec(width=4 if s else 100, temperature=0.01),
            dict(kind="nuts", model="weights", chains=2 if s else 4, warmup=5 if s else 100, draws=5 if s else 100),
        ),
        "wishart_1e5": (
            markov,
            markov.spec(width=100_000, temperature=0.01),
            dict(
                kind="nuts",
                model="order_parameters",
                chains=2 if s else 4,
                warmup=10 if s else 500,
                draws=10 if s else 1000,
            ),
        ),
        "gibbs_64": (
            markov,
            markov.spec(width=8 if s else 1000, temperature=0.01),
            dict(kind="gibbs", model="collapsed", chains=chains, warmup=3 if s else 50, draws=10 if s else 300),
        ),
    }

    def sampled(name, precision="float64"):
        task, spec, kw = runs[name]
        cfg = SamplerConfig(**kw, progress_bar=False, chain_method="parallel", precision=precision)
        return lambda: sample_case(name if precision == "float64" else f"{name}_f32", task, spec, cfg)

    todo = {name: sampled(name) for name in runs}
    todo.update({f"{name}_f32": sampled(name, "float32") for name in ("nuts_full", "wishart_1e5")})

    def digits():
        src = digits_episodes()
        sets = src.episode_sets(P=40 if s else 600, n_eval=20 if s else 1000, seed=0)
        rng = np.random.default_rng(0)
        G = 16
        layers = tuple(
            HeadLayer.qk(rng.standard_normal((4, G, src.n0)), rng.standard_normal((4, G, src.n0))) for _ in range(2)
        )
        return theory_case(src.task(layers, sets), [10, 100] if s else [10, 100, 1000, 10_000])

    todo["digits_theory"] = digits
    for name in args.cases:
        t0 = time.perf_counter()
        res = todo[name]()
        res["case_wall_s"] = time.perf_counter() - t0
        results["cases"].append(res)
        print(json.dumps(res), flush=True)
    from bayes_attn._io import atomic_write_json

    out = atomic_write_json(args.out, results, field="--out")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
