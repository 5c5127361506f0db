"""The shared driver: kinds and config, exact checkpoint/resume for every sampler and model (API,
``--resume`` and a real SIGKILL), sample statistics and output layout."""

import warnings

import numpy as np
import pytest
from conftest import RESUME_RUN, SHORT_RUN, SHORT_RUN_WIDTH, driver_problem, random_task, subprocess_env

from bayes_attn._errors import InputError
from bayes_attn.inference import KINDS, SAMPLERS, SamplerConfig, SamplingInterrupted, read_run, sample


#: one layer of two heads: the tests that compare two routes to the same draws (compile once, chain layouts,
#: runner vs numpyro.MCMC) compile about half as much as on two layers; the resume tests
#: keep the two-layer problem
ONE_LAYER = (2,)


def _same(a, b):
    assert set(a.children) == set(b.children)
    for group in ("posterior", "sample_stats", "warmup_sample_stats"):
        da, db = a[group].ds, b[group].ds
        assert set(da.data_vars) == set(db.data_vars)
        for k in da.data_vars:
            np.testing.assert_array_equal(da[k].values, db[k].values, err_msg=f"{group}/{k}")


class TestConfig:
    def test_kinds(self):
        assert set(KINDS) == set(SAMPLERS) == {"nuts", "mala", "ula", "gibbs", "tempering"}

    def test_default_draws_depend_on_the_model(self):
        assert SamplerConfig(model="order_parameters").draws == 1000
        assert SamplerConfig().draws == SamplerConfig(kind="gibbs", model="collapsed").draws == 500
        assert SamplerConfig(model="order_parameters", draws=20).draws == 20
        with pytest.raises(InputError, match="sampler.draws"):
            SamplerConfig(draws=0)

    def test_aliases(self):
        with pytest.warns(FutureWarning, match=r'sampler.kind = "wishart" is deprecated; use model="order_parameters"'):
            w = SamplerConfig(kind="wishart")
        assert (w.kind, w.model, w.dense_mass, w.draws) == ("nuts", "order_parameters", True, 1000)
        with pytest.warns(FutureWarning, match=r'sampler.collapsed = true is deprecated; use model="collapsed"'):
            c = SamplerConfig(kind="mala", collapsed=True)
        assert (c.kind, c.model, c.collapsed) == ("mala", "collapsed", True)
        assert c == SamplerConfig(kind="mala", model="collapsed")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # canonical spellings and normalised configs do not warn
            assert SamplerConfig(**vars(w)) == w and SamplerConfig(**vars(c)) == c
            assert SamplerConfig(model="order_parameters") == w
        with pytest.raises(InputError, match="model.kind"):
            SamplerConfig(kind="gibbs", model="order_parameters")
        with pytest.raises(InputError, match="sampler.collapsed"):
            SamplerConfig(collapsed=True, model="weights")

    def test_target_accept_defaults(self):
        assert SamplerConfig(kind="mala").target_accept == pytest.approx(0.574)
        assert SamplerConfig(kind="nuts").target_accept == 0.8
        assert SamplerConfig(kind="mala", target_accept=0.7).target_accept == 0.7

    @pytest.mark.parametrize(
        "kw,field",
        [
            (dict(ula_step_factor=2.5), "sampler.ula_step_factor"),
            (dict(step_size=-1.0), "sampler.step_size"),
            (dict(checkpoint_every=0), "sampler.checkpoint_every"),
            (dict(kind="hmc"), "sampler.kind"),
            (dict(chain_method="pmap"), "sampler.chain_method"),
            (dict(replicas=1), "sampler.replicas"),
            (dict(replicas=2.5), "sampler.replicas"),
            (dict(beta_min=0.0), "sampler.beta_min"),
            (dict(beta_min=1.0), "sampler.beta_min"),
            (dict(kind="tempering", model="collapsed"), "model.kind"),
        ],
    )
    def test_bad_values(self, kw, field):
        with pytest.raises(InputError, match=field):
            SamplerConfig(**kw)

    def test_vectorized_and_sequential_chains_agree(self):
        # same model, same seed: both chain methods must target the same posterior (means of f
        # within 5 combined MCSE); a broken vmap of the model would show up here.  The problem and settings of
        # the float64 run of tests/test_devices.py's float32 test, whose programs the sequential run shares.
        import arviz as az

        task, spec = driver_problem(ONE_LAYER)
        spec = spec.with_(width=10)
        means = {}
        for method in ("vectorized", "sequential"):
            cfg = SamplerConfig(
                kind="nuts",
                model="order_parameters",
                chains=2,
                warmup=300,
                draws=600,
                seed=3,
                progress_bar=False,
                chain_method=method,
            )
            f = sample(task, spec, cfg)["posterior"]["f"]
            means[method] = (f.mean(("chain", "draw")).values, az.mcse(f.to_dataset(), method="mean")["f"].values)
        (m1, s1), (m2, s2) = means["vectorized"], means["sequential"]
        assert np.all(np.abs(m1 - m2) <= 5 * np.hypot(s1, s2) + 1e-12)

    def test_chunked_chain_methods_give_the_same_draws(self):
        # the custom kernels key every chain by fold_in(seed, chain), so vmap, vmap sharded over the host
        # devices ("parallel") and lax.map over chains must return the same exact-Gibbs draws up to
        # floating-point reassociation (every kind on 1, 2 and 4 devices: tests/test_devices.py)
        # conftest.SHORT_RUN: the vectorized and parallel runs are those of tests/test_devices.py (shared programs).
        # Gibbs draws its normals in float32 (samplers._adapt.std_normal), and from jax 0.12.1 on a layout that runs
        # the plain jit (sharded) and one that runs the exported program evaluate them with and without fused
        # multiply-adds: a float32 rounding apart (measured 7e-8 absolute on f of order 0.01-1), hence atol 1e-6; the
        # sequential and vectorized layouts both run exported programs and agree to 2e-15
        task, spec = driver_problem(ONE_LAYER)
        spec = spec.with_(width=SHORT_RUN_WIDTH)
        f = {}
        for method in ("vectorized", "parallel", "sequential"):
            cfg = SamplerConfig(kind="gibbs", model="weights", seed=5, chain_method=method, **SHORT_RUN)
            f[method] = sample(task, spec, cfg)["posterior"]["f"].values
        np.testing.assert_allclose(f["parallel"], f["vectorized"], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(f["sequential"], f["vectorized"], rtol=1e-6, atol=1e-9)


RESUME_CASES = [
    ("nuts", "weights", 1),
    ("nuts", "collapsed", 3),
    ("nuts", "order_parameters", 1),
    ("mala", "collapsed", 1),
    ("ula", "weights", 3),
    ("gibbs", "weights", 3),
    # replica-exchange NUTS compiles about 7 s here (its replicas' NUTS and the exchange): in the slow set
    pytest.param("tempering", "order_parameters", 1, marks=pytest.mark.slow),
]


def _resume_id(case) -> str:
    k, m, s = case.values if hasattr(case, "values") else case
    return f"{k}-{m}-chunk{s}"


@pytest.mark.parametrize("kind,model,stop", RESUME_CASES, ids=[_resume_id(c) for c in RESUME_CASES])
def test_resume_gives_the_same_draws(tmp_path, kind, model, stop):
    """Interrupted after chunk ``stop`` (1: in warm-up, 3: in sampling) + resumed == uninterrupted, bit for bit."""
    task, spec = driver_problem()
    spec = spec.with_(width=4)
    cfg = SamplerConfig(kind=kind, model=model, draws=6, thinning=1, seed=7, **RESUME_RUN)
    ref = sample(task, spec, cfg)
    ck = tmp_path / "run.ckpt.npz"
    with pytest.raises(SamplingInterrupted):
        sample(task, spec, cfg, checkpoint=ck, stop_after_chunks=stop)
    assert ck.is_file()
    before = ck.read_bytes()
    with pytest.raises(InputError, match="resume"):  # a different seed must not reuse it
        sample(task, spec, SamplerConfig(**{**vars(cfg), "seed": 8}), checkpoint=ck, resume=True)
    with pytest.raises(InputError, match="resume"):  # nor a different data set
        sample(random_task(P=5, Q=3, S=3, n0=3, heads=(2, 2), seed=12), spec, cfg, checkpoint=ck, resume=True)
    assert ck.read_bytes() == before  # refused checkpoints are left untouched
    out = sample(task, spec, cfg, checkpoint=ck, resume=True)
    _same(ref, out)
    post, st = out["posterior"].ds, out["sample_stats"].ds
    assert post["f"].dims == ("chain", "draw", "test") and post.sizes["draw"] == 6
    assert post["U"].shape[2:] == (4, 4)
    assert set(SAMPLERS[kind].stats) == set(st.data_vars)
    if kind == "mala":  # the step size is frozen after warm-up
        assert np.all(st["step_size"].values == st["step_size"].values[:, :1])
    if kind == "gibbs":
        assert int(st["n_steps"].values.sum()) == 2 * 6 * (spec.n_layers + 2)
    # warm-up statistics: kept for every sampler (the floor counts their gradients), restored on resume
    ws = out["warmup_sample_stats"].ds
    assert set(ws.data_vars) == set(st.data_vars) and ws.sizes["draw"] == 4
    if kind in ("mala", "ula", "gibbs"):  # one gradient per Langevin step, L + 2 Gram solves per sweep
        assert int(ws["n_steps"].values.sum()) == 2 * 4 * (spec.n_layers + 2 if kind == "gibbs" else 1)


def test_bad_checkpoints_are_refused_with_one_line(tmp_path):
    """A truncated, foreign or other-version checkpoint: InputError naming resume, file left as it was."""
    import json

    task, spec = driver_problem()
    cfg = SamplerConfig(kind="gibbs", chains=2, warmup=2, draws=4, checkpoint_every=2, seed=1, progress_bar=False)
    ck = tmp_path / "run.ckpt.npz"
    with pytest.raises(SamplingInterrupted):
        sample(task, spec, cfg, checkpoint=ck, stop_after_chunks=1)
    good = ck.read_bytes()
    for name, data in (("truncated", good[: len(good) // 2]), ("foreign", b"not a checkpoint at all"), ("empty", b"")):
        bad = tmp_path / f"{name}.npz"
        bad.write_bytes(data)
        with pytest.raises(InputError, match=r"^resume: cannot read checkpoint") as exc:
            sample(task, spec, cfg, checkpoint=bad, resume=True)
        assert "\n" not in str(exc.value)
        assert bad.read_bytes() == data
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(InputError, match="not a bayes-attn checkpoint"):
        sample(task, spec, cfg, checkpoint=tmp_path / "other.npz", resume=True)
    with np.load(ck) as z:  # the same state, another package version in its metadata
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["package_version"] = "0.0.1"
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.raises(InputError, match="written by bayes_attn 0.0.1"):
        sample(task, spec, cfg, checkpoint=tmp_path / "old.npz", resume=True)
    meta["package_version"] = json.loads(str(np.load(ck)["meta"]))["package_version"]
    del meta["format"]  # a checkpoint of the layout before warm-up statistics were kept
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "layout1.npz", **arrays)
    with pytest.raises(InputError, match="older layout"):
        sample(task, spec, cfg, checkpoint=tmp_path / "layout1.npz", resume=True)
    # the good checkpoint still resumes
    out = sample(task, spec, cfg, checkpoint=ck, resume=True)
    assert out["posterior"].ds.sizes["draw"] == 4


def test_sigkill_then_cli_resume(tmp_path):
    """A ``bayes-attn sample`` process killed with SIGKILL during warm-up (right after its first
    checkpoint), then ``--resume``: the run file holds exactly the draws of an uninterrupted run, and
    no half-written run file is ever left behind."""
    import signal
    import subprocess
    import sys
    import time

    from bayes_attn.cli._main import main
    from bayes_attn.cli._sample import checkpoint_path
    from bayes_attn.tasks import save_bundle

    task, _ = driver_problem()
    save_bundle(task, tmp_path / "task.npz")
    (tmp_path / "c.toml").write_text(
        '[data]\nfile = "task.npz"\n[network]\nwidth = 5\ntemperature = 0.2\n[model]\nkind = "order_parameters"\n'
        '[sampler]\nkind = "nuts"\nchains = 2\nwarmup = 200\ndraws = 300\ncheckpoint_every = 5\nseed = 3\n'
        "progress_bar = false\n"
    )
    cfg = str(tmp_path / "c.toml")
    out = tmp_path / "run.nc"
    ck = checkpoint_path(out)
    env = subprocess_env()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from bayes_attn.cli import main; main()", "sample", cfg, "--out", str(out), "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    t0 = time.time()
    while not ck.is_file() and proc.poll() is None and time.time() - t0 < 600:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert ck.is_file() and not out.exists()
    assert main(["sample", cfg, "--out", str(out), "--quiet", "--resume"]) == 0
    assert not ck.exists() and not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob(ck.name + ".part*"))
    assert main(["sample", cfg, "--out", str(tmp_path / "ref.nc"), "--quiet"]) == 0
    _same(read_run(tmp_path / "ref.nc"), read_run(out))


def test_importing_inference_leaves_the_jax_backend_alone():
    """``request_host_devices`` only works before JAX starts its backend: importing the package (blackjax
    included, which computes at import time) must not start it."""
    import subprocess
    import sys

    code = (
        "from jax._src import xla_bridge as xb\n"
        "import bayes_attn.inference, bayes_attn.sweep, bayes_attn.diagnostics, bayes_attn.cli\n"
        "assert not xb._backends, 'backend started on import'\n"
        "bayes_attn.inference.request_host_devices(3)\n"
        "import jax\n"
        "assert jax.local_device_count() == 3, jax.local_device_count()\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_theory_solver_compiled_once_per_shape():
    """Widths, temperature and prior variances are traced in the theory solver: a second solve at other
    values does not retrace its Newton step (the samplers: test_a_second_cell_compiles_nothing)."""
    from bayes_attn.theory import solve
    from bayes_attn.theory._solver import _newton_data

    task, spec = driver_problem()
    spec = spec.with_(width=5)
    phi = task.phi("train", spec)
    solve(spec, phi, task.y_train)
    n = _newton_data._cache_size()
    solve(spec.with_(width=(40, 30, 20), temperature=0.07, variances=(1.2, 0.9, 1.1, 0.8)), phi, task.y_train)
    assert _newton_data._cache_size() == n


#: every sampler kind in the fast suite; NUTS on the two weight models in the slow set, where the one-device
#: reference runs of tests/test_devices.py compile the same programs (in the fast suite no other test does)
COMPILE_CASES = [
    pytest.param("nuts", "weights", False, id="nuts-weights", marks=pytest.mark.slow),
    pytest.param("nuts", "collapsed", False, id="nuts-collapsed", marks=pytest.mark.slow),
    *(
        pytest.param(k, m, w, id=f"{k}-{m}")
        for k, m, w in (
            ("nuts", "order_parameters", True),
            ("mala", "collapsed", False),
            ("ula", "collapsed", False),
            ("gibbs", "weights", False),
        )
    ),
]


@pytest.mark.parametrize("kind,model,new_width", COMPILE_CASES)
def test_a_second_cell_compiles_nothing(kind, model, new_width):
    """Every sampler kind: after one run, a run at another temperature, seed and prior variances (and width,
    on the order-parameter model, whose shapes do not depend on it) triggers no XLA compilation at all,
    counted by JAX's own compile events (a fresh jitted function must register one, so the counter is shown
    to work; the first run may reuse programs an earlier test compiled)."""
    import jax
    import jax.monitoring as monitoring

    events = []

    def listener(name, duration, **kw):
        if name == "/jax/core/compile/backend_compile_duration":
            events.append(duration)

    # the short run of tests/test_devices.py (conftest.SHORT_RUN), whose one-device reference runs share these programs
    task, spec = driver_problem(ONE_LAYER)
    spec = spec.with_(width=SHORT_RUN_WIDTH)
    base = dict(kind=kind, model=model, chain_method="vectorized", **SHORT_RUN)
    changes = dict(temperature=0.05, variances=(1.0, 0.7, 0.9), **({"width": (9, 6)} if new_width else {}))
    monitoring.register_event_duration_secs_listener(listener)
    try:
        jax.jit(lambda x: x * 3.0 + 1.0)(np.zeros(3))  # a new function: one compilation
        assert len(events) == 1
        sample(task, spec, SamplerConfig(seed=0, **base))
        first = len(events)
        sample(task, spec.with_(**changes), SamplerConfig(seed=11, **base))
        second = len(events) - first
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert second == 0, f"{kind}/{model}: {second} XLA compilations in the second cell"


def test_nuts_draws_are_numpyros_mcmc_draws():
    """samplers/nuts.py is NumPyro's own NUTS: on the order-parameter model the runner's draws equal those of
    numpyro.infer.MCMC (chains one after another, as both run them on CPU by default; traced model arguments)
    with the same seed, up to floating-point reassociation (XLA fuses the chunked loop differently: measured
    relative 2e-9 after 30 iterations); and the
    warm-up statistics (``warmup_sample_stats``: leapfrog steps, adapted step size) are NumPyro's
    ``collect_warmup`` extra fields."""
    import jax
    from numpyro.infer import MCMC, NUTS

    from bayes_attn.inference import build_model

    task, spec = driver_problem(ONE_LAYER)
    spec = spec.with_(width=4)
    cfg = SamplerConfig(
        model="order_parameters",
        chains=2,
        warmup=20,
        draws=10,
        seed=4,
        progress_bar=False,
        checkpoint_every=3,
    )
    dt = sample(task, spec, cfg)
    U = dt["posterior"]["U"].values
    model, args = build_model(task, spec, "order_parameters")
    mcmc = MCMC(
        NUTS(model.numpyro_model, dense_mass=True),
        num_warmup=20,
        num_samples=10,
        num_chains=2,
        chain_method="sequential",
        progress_bar=False,
        jit_model_args=True,
    )
    mcmc.warmup(jax.random.PRNGKey(4), args, collect_warmup=True, extra_fields=("num_steps", "adapt_state.step_size"))
    warm = mcmc.get_extra_fields(group_by_chain=True)
    np.testing.assert_array_equal(dt["warmup_sample_stats"]["n_steps"].values, warm["num_steps"])
    np.testing.assert_allclose(dt["warmup_sample_stats"]["step_size"].values, warm["adapt_state.step_size"], rtol=1e-7)
    mcmc.run(mcmc.post_warmup_state.rng_key, args)  # continues from the warm-up state: the same draws as one run
    z = mcmc.get_samples(group_by_chain=True)
    ref = np.array(
        [
            [np.asarray(model.derived({k: v[c, d] for k, v in z.items()}, args)["U"]) for d in range(10)]
            for c in range(2)
        ]
    )
    np.testing.assert_allclose(U, ref, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("thin", [1, 3])
def test_warmup_statistics_and_saved_warmup_draws(thin):
    """``warmup_sample_stats`` per thinning block like the draws (``n_steps`` summed: one gradient per MALA step,
    also over the last, partial block), and with ``save_warmup`` the warm-up draws' derived quantities in
    ``warmup_posterior``."""
    task, spec = driver_problem(ONE_LAYER)
    cfg = SamplerConfig(
        kind="mala",
        model="collapsed",
        chains=2,
        warmup=7,
        draws=6,
        thinning=thin,
        seed=2,
        checkpoint_every=2,
        progress_bar=False,
        save_warmup=True,
    )
    dt = sample(task, spec, cfg)
    ws, wp = dt["warmup_sample_stats"].ds, dt["warmup_posterior"].ds
    blocks = -(-7 // thin)
    assert ws.sizes["draw"] == wp.sizes["draw"] == blocks
    assert set(wp.data_vars) == set(dt["posterior"].ds.data_vars)
    steps = ws["n_steps"].values
    assert np.all(steps.sum(axis=1) == 7) and np.all(steps[:, -1] == 7 - thin * (blocks - 1))
    # the warm-up step size is being tuned, the sampling one is fixed
    assert np.ptp(ws["step_size"].values, axis=1).min() > 0
    assert "warmup_posterior" not in sample(task, spec, SamplerConfig(**{**vars(cfg), "save_warmup": False})).children
