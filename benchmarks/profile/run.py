"""Profile and floor of one sampling run per sampler x model: where the seconds go, and what they could be.

    python benchmarks/profile/run.py [--cases nuts-order_parameters ...] [--out benchmarks/profile/results.json]
    python benchmarks/profile/run.py --cold-warm [--repeats 3] [--cases ...]  # -> benchmarks/profile/cold_warm.json

Each case runs in a fresh process twice, one after the other: **cold** (an empty compilation cache of its
own) and **warm** (the cache the cold run filled), each on one claimed core as ``bayes-attn sample`` runs
(``bayes_attn._cpus.claim_cpus(1)``, then ``prime_compiler()``: an idle core is borrowed while it compiles).  A process does what the command does: import, build the data, sample
(``inference.sample`` with its phase clock), write the netCDF file.  It records

* ``import_s`` (from the first line of the process to the package and its dependencies imported and JAX's
  backend started), ``data_s``, the runner's phases
  ``init_s`` / ``warmup_s`` / ``end_s`` / ``sample_s`` (compilation included), ``model_output_s`` (building
  the model and the DataTree: the rest of ``sample``), ``write_s``, and ``total_s`` (all of it);
* ``compile_s`` per phase and in all: the wall-clock time of JAX's own trace, lowering and XLA compile events
  (``bayes_attn._cache.CompileTimer``: the union of their intervals, so that compilations on two threads at once
  count once) inside each phase's window;
* the **floor** (warm process, after the run): the run's unit of work timed alone on the same core --
  NUTS, MALA, ULA: the jitted, chain-vectorized value-and-gradient of the sampled density; Gibbs: one
  jitted, chain-vectorized sweep -- times the units the run used (``n_steps`` summed over
  ``warmup_sample_stats`` and ``sample_stats``: leapfrog steps or Langevin gradients; Gibbs: iterations),
  plus the stored quantities (``f``, ``f_var``, ``U`` on every test input) timed alone times the kept draws.
  Not counted, so the floor is a little low: NUTS's initial step-size search, ULA's end-of-warm-up power
  iteration (30 Hessian-vector products per chain).

The ratios ``total / floor`` (cold and warm) are the numbers the speed targets are set on.

``--cold-warm`` measures what a cold process adds instead: ``--repeats`` cold/warm pairs of each case (each pair
with a cache of its own, round-robin over the cases), at N = 30 and short runs (:data:`COLD_WARM_LENGTH`), without
the floor; it records ``cold_minus_warm_s`` (the difference of the totals) per pair, and beside it the part of that
difference spent in warm-up and sampling, which run the same compiled programs in both processes (timing noise).
The table in docs/design.md gives the median over the pairs (``scripts/tables/bench_cold_warm.py``).  The table in
docs/design.md ("Profile and floor") is generated from the JSON (``scripts/tables/bench_profile.py``).
"""

from __future__ import annotations

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent

#: Markov 4-path task (P = 100, 1000 test inputs), N = 10, T = 0.1, 4 chains; NUTS on the weight-space models
#: runs shorter (its trees are deep there; the floor ratio, not the ESS, is the point)
MARKOV = dict(P=100, n_test=1000, paths=4)
LONG, SHORT = (500, 1000), (200, 400)
CASES = {
    "nuts-order_parameters": ("markov", "nuts", "order_parameters", LONG),
    "nuts-collapsed": ("markov", "nuts", "collapsed", SHORT),
    "nuts-weights": ("markov", "nuts", "weights", SHORT),
    "mala-order_parameters": ("markov", "mala", "order_parameters", LONG),
    "mala-collapsed": ("markov", "mala", "collapsed", LONG),
    "mala-weights": ("markov", "mala", "weights", LONG),
    "ula-order_parameters": ("markov", "ula", "order_parameters", LONG),
    "ula-collapsed": ("markov", "ula", "collapsed", LONG),
    "ula-weights": ("markov", "ula", "weights", LONG),
    "gibbs-collapsed": ("markov", "gibbs", "collapsed", LONG),
    "gibbs-weights": ("markov", "gibbs", "weights", LONG),
    "digits-nuts-order_parameters": ("digits", "nuts", "order_parameters", LONG),
    # replica-exchange NUTS: every chain is 8 NUTS chains (its default replicas), so its floor counts theirs
    "tempering-order_parameters": ("markov", "tempering", "order_parameters", SHORT),
    # NUTS's chains run one after another on CPU ("auto"); the same runs vectorized, which "auto" did before
    # (NUTS under vmap runs every iteration as long as the longest tree, and its programs compile slower)
    "nuts-order_parameters-vectorized": ("markov", "nuts", "order_parameters", LONG, {"chain_method": "vectorized"}),
    "nuts-collapsed-vectorized": ("markov", "nuts", "collapsed", SHORT, {"chain_method": "vectorized"}),
}


def _unit_time(fn, *args, batches: int = 6, per_batch: int = 10) -> float:
    """Seconds per call of ``fn``: the fastest of ``batches`` batch means of ``per_batch`` calls each (on a shared
    machine the slow batches are the ones something else interrupted; one median still moved by a third)."""
    import jax

    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            jax.block_until_ready(fn(*args))
        best = min(best, (time.perf_counter() - t0) / per_batch)
    return best


SMOKE = os.environ.get("BAYES_ATTN_PROFILE_SMOKE") == "1"  # tiny sizes (tests/test_benchmarks.py)


def _task(name: str, width: int = 10):
    if name == "markov":
        from bayes_attn.tasks import markov_task

        task = markov_task(**(dict(P=10, n_test=20, paths=4) if SMOKE else MARKOV))
        return task, task.spec(width=width, temperature=0.1)
    import numpy as np

    from bayes_attn.network import HeadLayer
    from bayes_attn.tasks import digits_episodes

    src = digits_episodes()
    rng = np.random.default_rng(0)  # two layers of 2 random q.k heads: 4 paths
    layers = tuple(
        HeadLayer.qk(rng.standard_normal((2, 8, src.n0)), rng.standard_normal((2, 8, src.n0))) for _ in range(2)
    )
    task = src.task(layers, src.episode_sets(P=10 if SMOKE else 100, n_eval=20 if SMOKE else 1000, seed=0))
    return task, task.spec(width=width, temperature=0.1, readout="mean")


def floor(task, spec, cfg, dt) -> dict:
    """The unit of work timed alone, the units the run used, and the stored quantities timed alone."""
    import jax
    import numpy as np

    from bayes_attn.inference import build_model
    from bayes_attn.inference._runner import _program, chain_keys, compiled
    from bayes_attn.inference._devices import run_layout
    from bayes_attn.inference.samplers import Settings

    from bayes_attn.inference.samplers import SAMPLERS

    model, args = build_model(task, spec, cfg.model, path_inputs=SAMPLERS[cfg.kind].path_inputs)
    settings = Settings.from_config(cfg)
    layout = run_layout(cfg.kind, cfg)
    prog = _program(cfg.kind, model, settings)
    keys, _ = chain_keys(cfg.seed, cfg.chains)
    carry = compiled(cfg.kind, model, settings, False, layout, "init")(keys, None, args, None)
    pos = jax.vmap(prog.position, in_axes=(0, None))(carry, args)
    if cfg.kind == "gibbs":
        step = jax.jit(jax.vmap(lambda k, c, a: prog.step(k, c, a)[0], in_axes=(0, 0, None)))
        unit = _unit_time(step, keys, carry, args)
        units = cfg.warmup + cfg.draws  # sweeps per chain (the chains' sweeps are one vectorized call)
        unit_name = "sweep"
    else:
        vg = jax.jit(jax.vmap(jax.value_and_grad(lambda z, a: model.log_density(z, a)), in_axes=(0, None)))
        unit = _unit_time(vg, pos, args)
        per_it = np.concatenate(
            [np.asarray(dt["warmup_sample_stats"]["n_steps"].values), np.asarray(dt["sample_stats"]["n_steps"].values)],
            axis=1,
        )  # (chain, iteration)
        units = int(per_it.sum(axis=1).max())  # the chain with the most gradients, run alone
        lockstep = int(per_it.max(axis=0).sum())  # vectorized chains: each iteration waits for its longest tree
        unit_name = "value_and_grad"
    derive = jax.jit(jax.vmap(lambda z, a: dict(model.derived(z, a)), in_axes=(0, None)))
    derive_s = _unit_time(derive, pos, args)
    kept = int(dt["posterior"].sizes["draw"])
    return {
        "unit": unit_name,
        "unit_s": unit,
        "unit_timing": "fastest of 6 batch means of 10 calls",
        "units": units,
        "derived_s": derive_s,
        "kept": kept,
        "floor_s": unit * units + derive_s * kept,
        "lockstep_units": lockstep if cfg.kind != "gibbs" else units,
    }


def child(case: str, out: Path, want_floor: bool, width: int = 10, length: tuple[int, int] | None = None) -> None:
    from bayes_attn._cpus import claim_cpus

    claim_cpus(1)
    from bayes_attn._cpus import prime_compiler

    prime_compiler()  # as the command does once its devices are chosen
    import bayes_attn.inference as inf
    from bayes_attn._cache import CompileTimer, enable_compilation_cache
    import jax

    enable_compilation_cache()
    inf.sample, inf.write_run, inf.SamplerConfig  # noqa: B018  (the lazy imports: NumPyro, ArviZ, xarray)
    jax.devices()  # and JAX's backend, as the command's first computation would
    t_import = time.perf_counter()
    # wall-clock compile time from here to the end of the process: overlapping events (the runner compiles ahead on
    # a thread while it traces the next program) count once, as in a sweep's compile_s
    timer = contextlib.ExitStack().enter_context(CompileTimer())
    task_name, kind, model, (warmup, draws), *extra = CASES[case]
    extra = extra[0] if extra else {}
    if length is not None:
        warmup, draws = length
    if SMOKE:
        warmup, draws = 10, 10
    task, spec = _task(task_name, width)
    t_data = time.perf_counter()
    cfg = inf.SamplerConfig(
        kind=kind, model=model, chains=4, warmup=warmup, draws=draws, seed=0, progress_bar=False, **extra
    )
    timings = {"windows": []}
    dt = inf.sample(task, spec, cfg, timings=timings)
    t_sample = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        inf.write_run(dt, Path(tmp) / "run.nc")
    t_end = time.perf_counter()
    phases = {p: timings.get(p, 0.0) for p in ("init", "warmup", "end", "sample")}
    compile_by = {p: 0.0 for p in phases}
    for p, a, b in timings["windows"]:
        compile_by[p] += timer.seconds_within(a, b)
    res = {
        "case": case,
        "task": task_name,
        "sampler": kind,
        "model": model,
        "chains": 4,
        "chain_method": cfg.chain_method,
        "layout": inf.run_layout(kind, cfg).method,
        "warmup": warmup,
        "draws": draws,
        "width": list(spec.widths),
        "temperature": spec.temperature,
        "import_s": t_import - T_START,
        "data_s": t_data - t_import,
        **{f"{p}_s": v for p, v in phases.items()},
        "model_output_s": (t_sample - t_data) - sum(phases.values()),
        "write_s": t_end - t_sample,
        "total_s": t_end - T_START,
        "compile_s": timer.seconds,
        **{f"compile_{p}_s": v for p, v in compile_by.items()},
        "min_ess_bulk_f": float(_ess_f(dt)),
    }
    if want_floor:
        res.update(floor(task, spec, cfg, dt))
    out.write_text(json.dumps(res))


def _ess_f(dt):
    import arviz as az

    return az.ess(dt["posterior"].ds[["f"]], method="bulk")["f"].min().values


def run_case(case: str, tmp: Path, child_args: tuple[str, ...] = (), floor: bool = True) -> dict:
    """The cold and the warm process of one case, one after the other; ``tmp``: a folder of its own (its
    compilation cache starts empty)."""
    cache = tmp / f"cache-{case}"
    res = {}
    for mode in ("cold", "warm"):
        out = tmp / f"{case}-{mode}.json"
        env = {**os.environ, "BAYES_ATTN_CACHE_DIR": str(cache)}
        env.pop("BAYES_ATTN_CPUS", None)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", case, "--child-out", str(out), *child_args]
            + (["--floor"] if floor and mode == "warm" else []),
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{case} ({mode}) failed:\n{proc.stderr[-3000:]}")
        res[mode] = {**json.loads(out.read_text()), "process_wall_s": wall}
        print(f"{case} {mode}: {wall:.1f} s", flush=True)
    res["cold"]["cache_bytes"] = sum(p.stat().st_size for p in cache.iterdir() if p.is_file())
    res["cold"]["cache_files"] = sum(1 for p in cache.iterdir() if p.is_file())
    return res


#: short runs for the cold-minus-warm measurement: what a cold process adds (compiling) does not depend on the
#: run's length, while the sampling phases -- the same compiled programs in both processes -- add their timing
#: noise to the difference in proportion to their length (a few per cent of a minute-long run on this machine);
#: the costly iterations run fewer of them: NUTS's deep trees on the weight-space models, and tempering's eight
#: replicas per chain (at 40 warm-up iterations its ladder still moves, at iteration 20)
COLD_WARM_LENGTH, COLD_WARM_LENGTH_DEEP = (100, 100), (40, 40)
#: the width of the cold-minus-warm runs (the speed target is set at N = 30, 4 chains)
COLD_WARM_WIDTH = 30
_DEEP = ("nuts-collapsed", "nuts-weights", "nuts-collapsed-vectorized", "tempering-order_parameters")


def cold_warm(cases, repeats: int, width: int, tmp: Path, smoke: bool = False) -> dict:
    """``repeats`` cold/warm pairs of every case (round-robin over the cases, so that a slow spell of the machine
    falls on several cases rather than on all repeats of one), at width ``width`` and short lengths."""
    rows = {c: [] for c in cases}
    for r in range(repeats):
        for case in cases:
            w, d = COLD_WARM_LENGTH_DEEP if case in _DEEP else COLD_WARM_LENGTH
            if smoke:
                w, d = 10, 10
            res = run_case(
                case,
                tmp / f"repeat{r}",
                ("--width", str(width), "--length", str(w), str(d)),
                floor=False,
            )
            cold, warm = res["cold"], res["warm"]
            rows[case].append(
                {
                    "repeat": r,
                    "warmup": w,
                    "draws": d,
                    "cold_total_s": cold["total_s"],
                    "warm_total_s": warm["total_s"],
                    "cold_minus_warm_s": cold["total_s"] - warm["total_s"],
                    "cold_compile_s": cold["compile_s"],
                    "warm_compile_s": warm["compile_s"],
                    # the phases that run the same compiled programs in both processes
                    "cold_minus_warm_sampling_s": sum(cold[f"{p}_s"] - warm[f"{p}_s"] for p in ("warmup", "sample")),
                    "cold": cold,
                    "warm": warm,
                }
            )
            print(f"{case} repeat {r}: cold - warm {rows[case][-1]['cold_minus_warm_s']:.2f} s", flush=True)
    return {c: {"case": c, "width": width, "repeats": rows[c]} for c in cases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--out", help="default benchmarks/profile/results.json (cold_warm.json with --cold-warm)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (tests); never merged into an existing file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--width", type=int, default=10, help=argparse.SUPPRESS)
    ap.add_argument("--length", type=int, nargs=2, help=argparse.SUPPRESS)
    ap.add_argument(
        "--cold-warm",
        action="store_true",
        help="measure cold minus warm instead: --repeats pairs per case at width N = 30 and short lengths "
        "(default --out benchmarks/profile/cold_warm.json)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="cold/warm pairs per case with --cold-warm (default 3)")
    args = ap.parse_args()
    if args.child:
        child(args.child, Path(args.child_out), args.floor, args.width, tuple(args.length) if args.length else None)
        return
    sys.path.insert(0, str(HERE.parents[1]))
    from bayes_attn._io import atomic_write_json

    if args.smoke:
        os.environ["BAYES_ATTN_PROFILE_SMOKE"] = "1"
    out = Path(args.out or HERE / ("cold_warm.json" if args.cold_warm else "results.json"))
    old = {}
    if out.is_file() and not args.smoke:  # keep the cases not rerun
        old = {r["case"]: r for r in json.loads(out.read_text()).get("cases", [])}
    with tempfile.TemporaryDirectory() as tmp:
        if args.cold_warm:
            old.update(cold_warm(args.cases, args.repeats, COLD_WARM_WIDTH, Path(tmp), args.smoke))
        for case in [] if args.cold_warm else args.cases:
            r = run_case(case, Path(tmp))
            old[case] = {"case": case, "cold": r["cold"], "warm": r["warm"]}
    results = {
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]},
        "smoke": args.smoke,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "cases": [old[c] for c in CASES if c in old],
    }
    atomic_write_json(out, results, field="--out")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
