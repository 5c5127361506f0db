"""The shared driver: kinds and config, exact checkpoint/resume (API and ``--resume``),
sample statistics and output layout of the chunked samplers."""

import numpy as np
import pytest
from conftest import random_task

from bayes_attn._errors import InputError
from bayes_attn.inference import KINDS, RUNNERS, SamplerConfig, SamplingInterrupted, read_run, sample
from bayes_attn.network import NetworkSpec


def _problem():
    task = random_task(P=5, Q=3, S=3, n0=3, heads=(2, 2), seed=11)
    return task, NetworkSpec(heads=task.heads, n0=task.n0, width=3, temperature=0.2, readout="last")


def _same(a, b):
    for group in ("posterior", "sample_stats"):
        da, db = a[group].ds, b[group].ds
        assert set(da.data_vars) == set(db.data_vars)
        for k in da.data_vars:
            np.testing.assert_array_equal(da[k].values, db[k].values, err_msg=f"{group}/{k}")


class TestConfig:
    def test_kinds(self):
        assert set(KINDS) >= {"nuts", "mala", "ula", "gibbs"}
        assert all(k in RUNNERS for k in ("nuts", "mala", "ula", "gibbs"))

    def test_target_accept_defaults(self):
        assert SamplerConfig(kind="mala").target_accept == pytest.approx(0.574)
        assert SamplerConfig(kind="nuts").target_accept == 0.8
        assert SamplerConfig(kind="mala", target_accept=0.7).target_accept == 0.7

    @pytest.mark.parametrize("kw,field", [(dict(ula_step_factor=2.5), "sampler.ula_step_factor"),
                                          (dict(step_size=-1.0), "sampler.step_size"),
                                          (dict(checkpoint_every=0), "sampler.checkpoint_every"),
                                          (dict(kind="hmc"), "sampler.kind"),
                                          (dict(chain_method="pmap"), "sampler.chain_method")])
    def test_bad_values(self, kw, field):
        with pytest.raises(InputError, match=field):
            SamplerConfig(**kw)

    def test_chain_method_choice(self):
        # CPU: vmap by default (measured faster than pmap over host devices, docs/design.md);
        # "parallel" needs one device per chain and falls back to sequential with a warning
        import jax

        from bayes_attn.inference import chain_method

        assert jax.default_backend() == "cpu"
        assert chain_method(4) == "vectorized"
        assert chain_method(1) == "sequential"
        assert chain_method(2, "parallel") == "parallel"  # conftest asks for 2 host devices
        with pytest.warns(RuntimeWarning, match="sequentially"):
            assert chain_method(jax.local_device_count() + 1, "parallel") == "sequential"

    def test_vectorized_and_sequential_chains_agree(self):
        # same model, same seed: both chain methods must target the same posterior (means of f
        # within 5 combined MCSE); a broken vmap of the model would show up here
        import arviz as az

        task, spec = _problem()
        means = {}
        for method in ("vectorized", "sequential"):
            cfg = SamplerConfig(kind="nuts", collapsed=True, chains=2, warmup=200, draws=400, seed=3,
                                progress_bar=False, chain_method=method)
            f = sample(task, spec, cfg)["posterior"]["f"]
            means[method] = (f.mean(("chain", "draw")).values,
                             az.mcse(f.to_dataset(), method="mean")["f"].values)
        (m1, s1), (m2, s2) = means["vectorized"], means["sequential"]
        assert np.all(np.abs(m1 - m2) <= 5 * np.hypot(s1, s2) + 1e-12)

    def test_chunked_chain_methods_give_the_same_draws(self):
        # the custom kernels key every chain by fold_in(seed, chain), so vmap, pmap and lax.map
        # over chains must return the same exact-Gibbs draws up to floating-point reassociation
        task, spec = _problem()
        f = {}
        for method in ("vectorized", "parallel", "sequential"):
            cfg = SamplerConfig(kind="gibbs", collapsed=True, chains=2, warmup=4, draws=6, seed=5,
                                progress_bar=False, chain_method=method)
            f[method] = sample(task, spec, cfg)["posterior"]["f"].values
        np.testing.assert_allclose(f["parallel"], f["vectorized"], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(f["sequential"], f["vectorized"], rtol=1e-6, atol=1e-9)

    def test_resume_needs_a_chunked_sampler(self, tmp_path):
        task, spec = _problem()
        with pytest.raises(InputError, match="sampler.kind"):
            sample(task, spec, SamplerConfig(kind="nuts", chains=1, draws=2, warmup=0, progress_bar=False),
                   checkpoint=tmp_path / "c.npz", resume=True)


@pytest.mark.parametrize("kind,stop", [("gibbs", 3), ("mala", 1)])
def test_resume_gives_the_same_draws(tmp_path, kind, stop):
    """Interrupted (in warm-up for MALA, in sampling for Gibbs) + resumed == uninterrupted, bit for bit."""
    task, spec = _problem()
    cfg = SamplerConfig(kind=kind, collapsed=kind == "mala", chains=2, warmup=4, draws=6, thinning=1,
                        checkpoint_every=2, seed=7, progress_bar=False)
    ref = sample(task, spec, cfg)
    ck = tmp_path / "run.ckpt.npz"
    with pytest.raises(SamplingInterrupted):
        sample(task, spec, cfg, checkpoint=ck, stop_after_chunks=stop)
    assert ck.is_file()
    with pytest.raises(InputError, match="resume"):  # a different seed must not reuse it
        sample(task, spec, SamplerConfig(**{**vars(cfg), "seed": 8}), checkpoint=ck, resume=True)
    with pytest.raises(InputError, match="resume"):  # nor a different data set
        sample(random_task(P=5, Q=3, S=3, n0=3, heads=(2, 2), seed=12), spec, cfg, checkpoint=ck, resume=True)
    out = sample(task, spec, cfg, checkpoint=ck, resume=True)
    _same(ref, out)
    post, st = out["posterior"].ds, out["sample_stats"].ds
    assert post["f"].dims == ("chain", "draw", "test") and post.sizes["draw"] == 6
    assert post["U"].shape[2:] == (4, 4)
    assert {"diverging", "lp"} <= set(st.data_vars)
    if kind == "mala":
        assert {"acceptance_rate", "step_size", "n_grad_evals", "f_var"} <= set(st.data_vars) | set(post.data_vars)
        # the step size is frozen after warm-up
        assert np.all(st["step_size"].values == st["step_size"].values[:, :1])
    else:
        assert int(st["n_gram_evals"].values.sum()) == 2 * 6 * (spec.n_layers + 2)


@pytest.mark.slow
def test_cli_resume(tmp_path):
    """``bayes-attn sample CONFIG --out RUN.nc --resume`` continues an interrupted run exactly."""
    from bayes_attn.cli._main import main
    from bayes_attn.cli._sample import checkpoint_path
    from bayes_attn.tasks import save_bundle

    task, _ = _problem()
    save_bundle(task, tmp_path / "task.npz")
    (tmp_path / "c.toml").write_text(
        '[data]\nfile = "task.npz"\n[network]\nwidth = 3\ntemperature = 0.2\n'
        '[sampler]\nkind = "ula"\ncollapsed = true\nchains = 2\nwarmup = 4\ndraws = 8\nthinning = 2\n'
        'checkpoint_every = 1\nseed = 3\nprogress_bar = false\n')
    cfg = str(tmp_path / "c.toml")
    assert main(["sample", cfg, "--out", str(tmp_path / "ref.nc"), "--quiet"]) == 0
    # interrupt a second run after two chunks through the API, as Ctrl-C would, then resume by CLI
    from bayes_attn.cli._config import load_config

    rc = load_config(cfg)
    out = tmp_path / "run.nc"
    with pytest.raises(SamplingInterrupted):
        sample(rc.task(), rc.spec(rc.task()), rc.sampler, config_text=rc.text, checkpoint=checkpoint_path(out),
               stop_after_chunks=2)
    assert main(["sample", cfg, "--out", str(out), "--quiet", "--resume"]) == 0
    assert not checkpoint_path(out).exists()
    _same(read_run(tmp_path / "ref.nc"), read_run(out))
