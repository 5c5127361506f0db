"""Where chains run (bayes_attn.inference._devices) and in what precision (``[sampler] precision``): the layout
rules, bad input, the same draws on 1, 2 and 4 host devices (conftest asks for 4) for every sampler kind, and
float32 runs that are float32 throughout and agree with float64 within Monte Carlo error."""

import numpy as np
import pytest
from conftest import SHORT_RUN, SHORT_RUN_WIDTH, driver_problem, random_task

from bayes_attn._errors import InputError
from bayes_attn.inference import (
    ChainLayout,
    SamplerConfig,
    chain_layout,
    chain_method,
    fingerprint,
    host_devices_needed,
    run_layout,
    sample,
)


def _problem(heads=(2,), width=SHORT_RUN_WIDTH):
    task, spec = driver_problem(heads)
    return task, spec.with_(width=width)


class TestLayout:
    def test_rules(self):
        import jax

        assert jax.default_backend() == "cpu" and jax.local_device_count() == 4
        # CPU: one device (measured faster than spreading chains over host devices, docs/design.md), vectorized
        # unless the sampler's registry entry says otherwise (next test)
        assert chain_layout(4) == ChainLayout("vectorized", 1) and chain_method(4) == "vectorized"
        assert chain_layout(1) == ChainLayout("sequential", 1) == chain_layout(1, "parallel")
        assert chain_layout(4, "sequential") == ChainLayout("sequential", 1)
        # "parallel" (was pmap): the largest number of devices that divides the chains
        assert chain_layout(4, "parallel") == ChainLayout("vectorized", 4) and chain_method(4, "parallel") == "parallel"
        assert chain_layout(6, "parallel") == ChainLayout("vectorized", 3)
        assert chain_layout(8, "parallel") == ChainLayout("vectorized", 4)
        with pytest.warns(RuntimeWarning, match="vectorized on one device"):
            assert chain_layout(5, "parallel") == ChainLayout("vectorized", 1)
        assert chain_layout(4, "vectorized", devices=2) == ChainLayout("vectorized", 2)
        assert chain_layout(4, "auto", devices=4) == ChainLayout("vectorized", 4)

    def test_auto_on_cpu_follows_the_samplers_registry_entry(self, monkeypatch):
        from bayes_attn.inference import _runner
        from bayes_attn.inference.samplers import SAMPLERS

        # NUTS: one chain after another (vectorized trees wait for the longest; docs/design.md, "Chains on CPU")
        assert SAMPLERS["nuts"].cpu_chains == "sequential"
        assert {SAMPLERS[k].cpu_chains for k in ("mala", "ula", "gibbs")} == {"vectorized"}
        assert chain_layout(4, cpu_method="sequential") == ChainLayout("sequential", 1)
        assert chain_method(4, cpu_method="sequential") == "sequential"
        # an explicit method, a forced layout or one chain is not the sampler's choice
        assert chain_layout(4, "vectorized", cpu_method="sequential") == ChainLayout("vectorized", 1)
        assert chain_layout(4, "auto", devices=2, cpu_method="sequential") == ChainLayout("vectorized", 2)
        # the runner lays its chains out by the sampler's entry (stopped before anything compiles)
        seen = []

        def spy(*a):
            seen.append(run_layout(*a))
            raise KeyboardInterrupt

        monkeypatch.setattr(_runner, "run_layout", spy)
        for kind, method in [("nuts", "sequential"), ("mala", "vectorized")]:
            with pytest.raises(KeyboardInterrupt):
                _runner.run_chains(kind, None, None, SamplerConfig(kind=kind, chains=4), None, fp="")
            assert seen[-1] == ChainLayout(method, 1)

    def test_host_devices_are_asked_for_only_when_chains_are_sharded(self):
        """A run on one device asks XLA for no host devices (so that its compilation-cache keys, which include the
        device topology, are those of every other one-device process); sharded runs ask for what they shard over."""
        for method in ("auto", "vectorized", "sequential"):
            assert host_devices_needed(4, method) is None
            assert chain_layout(4, method).devices == 1
        assert host_devices_needed(4, "parallel") == 4 and host_devices_needed(1, "parallel") is None
        assert host_devices_needed(4, "auto", devices=2) == 2 == chain_layout(4, "auto", devices=2).devices

    def test_no_pmap_left(self):
        from pathlib import Path

        import bayes_attn

        src = [p for p in Path(bayes_attn.__file__).parent.rglob("*.py") if "pmap(" in p.read_text()]
        assert not src, src

    @pytest.mark.parametrize(
        "kw,match",
        [
            (dict(devices=0), "sampler.devices"),
            (dict(devices=-2), "sampler.devices"),
            (dict(devices=3), "sampler.devices: 3 devices do not divide 4 chains"),
            (dict(devices=2.0), "sampler.devices"),
            (dict(devices=2, chain_method="sequential"), "sampler.devices"),
            (dict(precision="float16"), "sampler.precision"),
            (dict(precision="double"), "sampler.precision"),
        ],
    )
    def test_bad_config(self, kw, match):
        with pytest.raises(InputError, match=match):
            SamplerConfig(chains=4, **kw)

    def test_more_devices_than_present(self):
        with pytest.raises(InputError, match="sampler.devices: 8 requested but JAX sees 4"):
            chain_layout(8, devices=8)

    def test_cli_bad_layout_is_one_line_exit_2(self, tmp_path, capsys):
        from bayes_attn.cli import main
        from bayes_attn.tasks import save_bundle

        save_bundle(random_task(P=5, Q=3, S=3, n0=3, heads=(2,), seed=1), tmp_path / "b.npz")
        cfg = tmp_path / "run.toml"
        cfg.write_text(
            '[data]\nfile = "b.npz"\n[network]\nwidth = 3\ntemperature = 0.2\n[sampler]\nchains = 4\ndevices = 3\n'
        )
        code = main(["sample", str(cfg), "--out", str(tmp_path / "o.nc"), "--quiet"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.count("\n") == 0 and "sampler.devices" in err and "Traceback" not in err
        assert not (tmp_path / "o.nc").exists()

    def test_fingerprint_has_precision_not_layout(self):
        task, spec = _problem()
        fp = lambda **kw: fingerprint(SamplerConfig(chains=4, **kw), spec, "m", ())  # noqa: E731
        assert fp() == fp(devices=2) == fp(chain_method="parallel") == fp(chain_method="sequential")
        assert fp(precision="float32") != fp()


#: every sampler kind; NUTS on the two weight models and the 2-device layouts in the slow set (the suite's time)
_KINDS = [
    ("nuts", "order_parameters"),
    ("mala", "collapsed"),
    ("ula", "collapsed"),
    ("gibbs", "weights"),
    ("nuts", "weights"),
    ("nuts", "collapsed"),
]
DEVICE_CASES = [
    pytest.param(
        k,
        m,
        d,
        id=f"{k}-{m}-{d}dev",
        marks=[pytest.mark.slow] if (d == 2 or k == "nuts" and m != "order_parameters") else [],
    )
    for k, m in _KINDS
    for d in (4, 2)
]
_ONE_DEVICE = {}


def _run(kind, model, devices):
    task, spec = _problem()
    return sample(task, spec, SamplerConfig(kind=kind, model=model, seed=5, devices=devices, **SHORT_RUN))


@pytest.mark.parametrize("kind,model,devices", DEVICE_CASES)
def test_sharded_chains_give_the_same_draws(kind, model, devices):
    """Four chains vectorized on one device or sharded over 2 or 4 host devices: the same draws up to
    floating-point reassociation (XLA batches the vmapped ops differently: measured relative differences
    <= 1e-10 after 12 iterations) and the same discrete statistics (divergences, tree sizes).

    Gibbs draws its default start in float32 (``samplers._adapt.std_normal``) and XLA fuses that generation
    differently per layout: starts differ by float32 rounding (measured ~1e-7 relative; from the same float64
    start the layouts agree to 1e-15), so its draws are compared at float32 resolution."""
    rtol, atol = (1e-4, 1e-5) if kind == "gibbs" else (1e-8, 1e-10)
    if (kind, model) not in _ONE_DEVICE:
        _ONE_DEVICE[kind, model] = _run(kind, model, 1)
    a_tree, b_tree = _ONE_DEVICE[kind, model], _run(kind, model, devices)
    for group in ("posterior", "sample_stats"):
        a, b = a_tree[group].ds, b_tree[group].ds
        assert set(a.data_vars) == set(b.data_vars)
        for k in a.data_vars:
            if a[k].dtype.kind in "biu":
                np.testing.assert_array_equal(a[k].values, b[k].values, err_msg=f"{group}/{k}")
            else:
                np.testing.assert_allclose(a[k].values, b[k].values, rtol=rtol, atol=atol, err_msg=f"{group}/{k}")


def test_float32_runs_are_float32_and_agree_with_float64():
    """``precision = "float32"``: every stored draw and statistic is 32-bit, x64 stays on outside the run, and
    the posterior means of the predictions and of ``U`` agree with a float64 run (another seed) within 5
    combined MCSE."""
    import arviz as az
    import jax

    task, spec = _problem(width=10)
    out = {}
    for prec, seed in (("float64", 1), ("float32", 2)):
        cfg = SamplerConfig(
            kind="nuts",
            model="order_parameters",
            chains=2,
            warmup=300,
            draws=600,
            seed=seed,
            progress_bar=False,
            precision=prec,
        )
        out[prec] = sample(task, spec, cfg)
        assert out[prec].attrs["precision"] == prec
    assert jax.config.jax_enable_x64
    for group in ("posterior", "sample_stats"):
        for k, v in out["float32"][group].ds.data_vars.items():
            assert v.dtype in (np.float32, np.int32, np.bool_), f"{group}/{k}: {v.dtype}"
    assert out["float64"]["posterior"]["f"].dtype == np.float64
    for k in ("f", "f_var", "U_a"):
        m, s = {}, {}
        for prec, dt in out.items():
            x = dt["posterior"][k].astype(np.float64)
            m[prec], s[prec] = x.mean(("chain", "draw")).values, az.mcse(x.to_dataset(), method="mean")[k].values
        assert np.all(np.abs(m["float32"] - m["float64"]) <= 5 * np.hypot(s["float32"], s["float64"]) + 1e-12), k
