"""Attention learned by maximising the evidence; `bayes-attn evidence` and `bayes-attn fit-attention`
(docs/evidence.md §5)."""

import json

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_task

from bayes_attn.cli import main
from bayes_attn.network import HeadLayer
from bayes_attn.tasks import Task, load_bundle, save_bundle
from bayes_attn.theory import attention_params, fit_attention, log_evidence, phi_of, with_attention


def test_phi_of_matches_task_phi():
    for style in ("w", "qk"):
        task = random_task(P=7, Q=3, S=3, n0=4, heads=(2, 3), seed=1, style=style)
        spec = task.spec(width=5, temperature=0.1, readout="mean", variances=[1.3, 1, 1, 1])
        got = phi_of(attention_params(task), jnp.asarray(task.x_train), "mean", 1.3)
        np.testing.assert_allclose(got, task.phi("train", spec), rtol=1e-12)
        back = with_attention(task, attention_params(task))
        np.testing.assert_allclose(back.phi("test", spec), task.phi("test", spec), rtol=1e-12)


def test_fit_raises_evidence_and_keeps_best():
    task = random_task(P=12, Q=5, S=3, n0=4, heads=(2, 1), seed=3)
    spec = task.spec(width=8, temperature=0.1)
    res = fit_attention(task, spec, steps=8, lr=0.05, val=(task.x_test, task.y_test), eval_every=4)
    ev = [e["log_evidence"] for e in res.history]
    assert len(ev) == 9 and ev[-1] > ev[0] + 0.1
    assert res.best_step == int(np.argmax(ev)) and not res.diverged
    # the kept parameters reproduce the recorded best evidence (independent route: Task -> Phi -> evidence)
    again = log_evidence(with_attention(task, res.params), spec).log_evidence
    assert again == pytest.approx(max(ev), rel=1e-8)
    assert [e["val_accuracy"] is not None for e in res.history] == [s % 4 == 0 or s == 8 for s in range(9)]


def _bundle(tmp_path, task, extra="", width=6, name="b"):
    save_bundle(task, tmp_path / f"{name}.npz")
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(f'[data]\nfile = "{name}.npz"\n[network]\nwidth = {width}\ntemperature = 0.1\n{extra}')
    return cfg


def test_cli_evidence_and_fit_attention(tmp_path, capsys):
    task = random_task(P=10, Q=4, S=3, n0=4, heads=(2, 1), seed=2, style="qk")
    cfg = _bundle(tmp_path, task)
    ev = tmp_path / "ev.json"
    assert main(["evidence", str(cfg), "--exact", "--pairs", "200", "--out", str(ev), "--no-progress"]) == 0
    d = json.loads(ev.read_text())
    assert {"log_evidence_saddle", "log_evidence_exact", "log_evidence_exact_mcse"} <= set(d)
    assert d["log_evidence_saddle"] == pytest.approx(
        log_evidence(task, task.spec(width=6, temperature=0.1)).log_evidence, rel=1e-10
    )
    assert abs(d["log_evidence_exact"] - d["log_evidence_saddle"]) < 3.0  # N = 6: O(1) apart
    out = tmp_path / "learned.npz"
    assert main(["fit-attention", str(cfg), "--out", str(out), "--steps", "3", "--lr", "0.05", "--no-progress"]) == 0
    s = json.loads(out.with_suffix(".json").read_text())
    assert len(s["log_evidence"]) == 4 and s["log_evidence"][-1] > s["log_evidence"][0]
    assert {"test_accuracy_initial", "test_accuracy_final", "settings"} <= set(s)
    assert s["settings"]["rank"] == [3, 3]
    assert s["log_evidence"][0] == pytest.approx(d["log_evidence_saddle"], rel=1e-10)
    assert s["objective"] == s["log_evidence"] and s["settings"]["prior_scale"] is None  # no hyperprior
    learned = load_bundle(out)
    assert [l.style for l in learned.layers] == ["qk", "qk"]
    # the bundle is a [data] file for the other commands: its evidence is the best recorded one
    cfg2 = tmp_path / "c2.toml"
    cfg2.write_text('[data]\nfile = "learned.npz"\n[network]\nwidth = 6\ntemperature = 0.1\n')
    assert main(["evidence", str(cfg2), "--out", str(tmp_path / "ev2.json")]) == 0
    d2 = json.loads((tmp_path / "ev2.json").read_text())
    assert d2["log_evidence_saddle"] == pytest.approx(max(s["log_evidence"]), rel=1e-8)


def test_cli_bad_input(tmp_path, capsys):
    task = random_task(P=8, Q=3, S=3, n0=4, heads=(2, 2), seed=2)
    cfg = _bundle(tmp_path, task, width=3)

    def err(argv):
        code = main(argv)
        line = capsys.readouterr().err.strip()
        assert code == 2 and len(line.splitlines()) == 1 and "Traceback" not in line, line
        return line

    out = str(tmp_path / "o.npz")
    assert err(["fit-attention", str(cfg), "--out", out, "--lr", "0"]).startswith("error: --lr")
    assert err(["fit-attention", str(cfg), "--out", out, "--prior-scale", "0"]).startswith("error: --prior-scale")
    np.save(tmp_path / "b3.npy", np.eye(3))  # the tokens have n0 = 4 entries
    assert err(["fit-attention", str(cfg), "--out", out, "--basis", str(tmp_path / "b3.npy")]).startswith(
        "error: --basis"
    )
    (tmp_path / "junk.npy").write_text("not an array")
    (tmp_path / "empty.npy").write_bytes(b"")
    np.savez(tmp_path / "arch.npz", B=np.eye(4))
    np.save(tmp_path / "cplx.npy", np.eye(4) * (1 + 1j))
    np.save(tmp_path / "none.npy", np.zeros((4, 0)))
    for bad in ("junk.npy", "empty.npy", "arch.npz", "cplx.npy", "none.npy"):
        assert err(["fit-attention", str(cfg), "--out", out, "--basis", str(tmp_path / bad)]).startswith(
            "error: --basis"
        )
    assert err(["fit-attention", str(cfg), "--out", out, "--steps", "-1"]).startswith("error: --steps")
    assert "N_1 >= p_1" in err(["fit-attention", str(cfg), "--out", out, "--exact"])  # N = 3 < 4 paths
    assert "N_1 >= p_1" in err(["evidence", str(cfg), "--out", str(tmp_path / "e.json"), "--exact"])
    # user-supplied attention arrays cannot be learned
    om = [l.matrices(jnp.asarray(task.x_train)) for l in task.layers]
    omt = [l.matrices(jnp.asarray(task.x_test)) for l in task.layers]
    fixed = Task(
        task.x_train,
        task.y_train,
        task.x_test,
        task.y_test,
        tuple(HeadLayer.fixed(train=np.asarray(a), test=np.asarray(b)) for a, b in zip(om, omt)),
    )
    cfg_f = _bundle(tmp_path, fixed, name="fixed")
    assert err(["fit-attention", str(cfg_f), "--out", out]).startswith("error: data.attention_train_1")
    # a bundle without labels
    d = dict(np.load(tmp_path / "b.npz"))
    d.pop("y_train")
    np.savez(tmp_path / "nolabels.npz", **d)
    (tmp_path / "nl.toml").write_text('[data]\nfile = "nolabels.npz"\n[network]\nwidth = 6\ntemperature = 0.1\n')
    assert err(["fit-attention", str(tmp_path / "nl.toml"), "--out", out]).startswith("error: data.y_train")
    assert err(["evidence", str(tmp_path / "nl.toml"), "--out", str(tmp_path / "e.json")]).startswith(
        "error: data.y_train"
    )


def test_diverging_fit_keeps_best_bundle(tmp_path, capsys, monkeypatch):
    import bayes_attn.theory._learn as learn

    task = random_task(P=12, Q=5, S=3, n0=4, heads=(2, 1), seed=3)
    cfg = _bundle(tmp_path, task)
    real, calls = learn.saddle_attention_grad, []

    def flaky(*a, **k):  # the third gradient is NaN: the optimisation must stop there
        g = real(*a, **k)
        calls.append(1)
        return [{n: v * np.nan for n, v in p.items()} for p in g] if len(calls) == 3 else g

    monkeypatch.setattr(learn, "saddle_attention_grad", flaky)
    out = tmp_path / "o.npz"
    assert main(["fit-attention", str(cfg), "--out", str(out), "--steps", "10", "--lr", "0.05", "--no-progress"]) == 1
    assert "non-finite" in capsys.readouterr().err
    s = json.loads(out.with_suffix(".json").read_text())
    assert s["diverged"] and len(s["log_evidence"]) == 3 and s["best_step"] == int(np.argmax(s["log_evidence"][:2]))
    assert load_bundle(out).n_train == 12


def test_fit_with_exact_evidence_and_fisher_gradient():
    """``exact=True``: the recorded value is the exact evidence with its MCSE, the step follows Fisher's gradient."""
    task = random_task(P=12, Q=5, S=3, n0=4, heads=(2, 1), seed=3)
    spec = task.spec(width=20, temperature=0.1)
    res = fit_attention(task, spec, steps=3, lr=0.05, exact=True, n_pairs=300)
    h = res.history
    assert len(h) == 4 and all(0 < e["log_evidence_mcse"] < 0.05 for e in h)
    # exact and saddle values of the same attention differ by O(1/N) (docs/evidence.md §4)
    assert all(abs(e["log_evidence"] - e["log_evidence_saddle"]) < 0.5 for e in h)
    assert h[-1]["log_evidence"] > h[0]["log_evidence"] + 4 * (h[0]["log_evidence_mcse"] + h[-1]["log_evidence_mcse"])


def _objective(task, spec, theta, basis, sigma, term="log_evidence"):
    """Independent route to the MAP-II objective: Task with the expanded attention -> evidence (or its leading
    term ``action_term``, whose gradient is the one followed), minus the prior."""
    full = [{k: (v @ basis.T if k in ("Q", "K") else basis @ v @ basis.T) for k, v in p.items()} for p in theta]
    sq = sum(float(np.sum(np.asarray(v) ** 2)) for p in theta for v in p.values())
    return getattr(log_evidence(with_attention(task, full), spec), term) - 0.5 * sq / sigma**2


@pytest.mark.parametrize("style", ["w", "qk"])
def test_basis_and_hyperprior_objective_and_first_step(style):
    """With a basis and a Gaussian hyperprior (docs/evidence.md eq. (E5)): the recorded objective is ln Z minus
    |theta'|^2 / (2 sigma^2) of the coordinates, the learned heads lie in span(B), and Adam's first step (lr times
    the sign of the gradient) follows the finite-difference derivative of the leading term minus the prior (the
    gradient that is followed, docs/evidence.md §5) in every coordinate where that derivative is clearly non-zero."""
    task = random_task(P=10, Q=4, S=3, n0=5, heads=(2, 1), seed=4, style=style)
    spec = task.spec(width=7, temperature=0.1)
    B = np.linalg.qr(np.random.default_rng(0).standard_normal((5, 3)))[0] * np.array([1.0, 2.0, 0.5])  # units
    Bp = np.linalg.pinv(B)
    sigma, lr = 0.8, 1e-3
    res = fit_attention(task, spec, steps=1, lr=lr, prior_scale=sigma, basis=B)
    assert res.best_step == 1  # one small step up the objective: res.params are the parameters after it
    theta0 = [
        {k: (v @ Bp.T if k in ("Q", "K") else Bp @ v @ Bp.T) for k, v in p.items()} for p in attention_params(task)
    ]
    h0 = res.history[0]
    assert h0["objective"] == pytest.approx(_objective(task, spec, theta0, B, sigma), rel=1e-9)
    assert h0["log_prior"] < 0 and h0["objective"] == pytest.approx(h0["log_evidence"] + h0["log_prior"], rel=1e-12)
    assert res.best_step == int(np.argmax([e["objective"] for e in res.history]))
    for p in attention_params(with_attention(task, res.params)):  # learned heads: no component outside span(B)
        for k, v in p.items():
            v = np.asarray(v)
            out = v - v @ (B @ Bp).T if k in ("Q", "K") else v - B @ Bp @ v @ (B @ Bp).T
            np.testing.assert_allclose(out, 0.0, atol=1e-12)
    # the first step: theta1 - theta0 = lr * sign(dJ/dtheta); checked against central differences of J
    theta1 = [
        {k: (v @ Bp.T if k in ("Q", "K") else Bp @ v @ Bp.T) for k, v in p.items()}
        for p in attention_params(with_attention(task, res.params))
    ]
    rng, h, checked = np.random.default_rng(1), 1e-5, 0
    for l, p in enumerate(theta0):
        for k, v in p.items():
            v = np.asarray(v)
            for idx in [tuple(rng.integers(0, s) for s in v.shape) for _ in range(3)]:

                def J(d):
                    th = [{kk: np.array(vv) for kk, vv in pp.items()} for pp in theta0]
                    th[l][k][idx] += d
                    return _objective(task, spec, th, B, sigma, term="action_term")

                fd = (J(h) - J(-h)) / (2 * h)
                step = float(np.asarray(theta1[l][k])[idx] - v[idx])
                if abs(fd) > 1e-3:
                    assert np.sign(step) == np.sign(fd) and abs(step) == pytest.approx(lr, rel=1e-3), (l, k, idx, fd)
                    checked += 1
    assert checked >= 3


def test_kept_parameters_maximise_the_objective_not_the_evidence():
    """With a strong hyperprior the kept step is the argmax of the objective (evidence + log prior)."""
    task = random_task(P=12, Q=5, S=3, n0=4, heads=(2, 1), seed=3)
    spec = task.spec(width=8, temperature=0.1)
    res = fit_attention(task, spec, steps=6, lr=0.2, prior_scale=0.3)
    obj = [e["objective"] for e in res.history]
    ev = [e["log_evidence"] for e in res.history]
    assert obj[-1] > obj[0] + 1.0  # the prior pulls theta in: the objective climbs
    assert res.best_step == int(np.argmax(obj))
    np.testing.assert_allclose(np.array(obj) - np.array(ev), [e["log_prior"] for e in res.history], rtol=1e-12)


def test_bad_basis_and_prior_scale():
    task = random_task(P=8, Q=3, S=3, n0=4, heads=(2,), seed=2)
    spec = task.spec(width=5, temperature=0.1)
    from bayes_attn._errors import InputError

    with pytest.raises(InputError, match="basis"):
        fit_attention(task, spec, steps=1, basis=np.ones((4, 2)))  # rank 1 < 2 columns
    with pytest.raises(InputError, match="basis"):
        fit_attention(task, spec, steps=1, basis=np.eye(3))  # wrong token dimension
    with pytest.raises(InputError, match="basis"):
        fit_attention(task, spec, steps=1, basis=np.zeros((4, 0)))  # no direction at all
    with pytest.raises(InputError, match="^prior_scale: "):  # the library names its own parameters
        fit_attention(task, spec, steps=1, prior_scale=-1.0)
    with pytest.raises(InputError, match="^steps: "):
        fit_attention(task, spec, steps=0)


def test_cli_fit_attention_with_basis_and_prior(tmp_path):
    """``--basis B.npy --prior-scale S``: the bundle's heads lie in span(B); the JSON records the objective."""
    task = random_task(P=10, Q=4, S=3, n0=4, heads=(2, 1), seed=2, style="qk")
    cfg = _bundle(tmp_path, task)
    B = np.linalg.qr(np.random.default_rng(3).standard_normal((4, 2)))[0]
    np.save(tmp_path / "B.npy", B)
    out = tmp_path / "l.npz"
    assert (
        main(
            [
                "fit-attention",
                str(cfg),
                "--out",
                str(out),
                "--steps",
                "2",
                "--lr",
                "0.05",
                "--no-progress",
                "--basis",
                str(tmp_path / "B.npy"),
                "--prior-scale",
                "2.0",
            ]
        )
        == 0
    )
    s = json.loads(out.with_suffix(".json").read_text())
    assert s["settings"]["prior_scale"] == 2.0 and s["settings"]["basis_shape"] == [4, 2]
    np.testing.assert_allclose(np.array(s["objective"]) - np.array(s["log_evidence"]), s["log_prior"], rtol=1e-12)
    assert all(lp < 0 for lp in s["log_prior"])
    for layer in load_bundle(out).layers:
        for k in ("Q", "K"):
            v = np.asarray(layer.params[k])
            np.testing.assert_allclose(v - v @ B @ B.T, 0.0, atol=1e-12)


def test_renamed_maps_library_names_onto_flags_and_leaves_others():
    """``bayes_attn._errors.renamed``: the command line's map from the library's parameter names to its flags."""
    from bayes_attn._errors import InputError, positive, renamed

    with pytest.raises(InputError, match="^--steps: must be > 0, got 0$") as info:
        with renamed({"steps": "--steps"}):
            positive(0, "steps", integer=True)
    assert info.value.field == "--steps"
    with pytest.raises(InputError, match="^lr: "):  # not in the map: unchanged
        with renamed({"steps": "--steps"}):
            positive(-1.0, "lr")


@pytest.mark.parametrize("style", ["w", "qk"])
@pytest.mark.parametrize("readout", ["last", "mean"])
def test_phi_of_is_phi_of_the_full_attention_maps(style, readout):
    """phi_of forms only the read query of a qk last layer; the numbers are those of the full maps (2.4a), (4.1b)."""
    from bayes_attn.network import path_attention, path_inputs, phi
    from bayes_attn.theory._learn import attention_matrices

    task = random_task(P=5, Q=2, S=4, n0=4, heads=(2, 2), seed=2, style=style)
    params = attention_params(task)
    x = jnp.asarray(task.x_train)
    full = phi(path_inputs(x, path_attention(attention_matrices(params, x), readout)), 0.7)
    np.testing.assert_allclose(phi_of(params, x, readout, 0.7), full, rtol=1e-12, atol=1e-14)
