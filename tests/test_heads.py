"""Head scores normalised across layers or per layer; evidence-based head selection (docs/evidence.md §6)."""

import numpy as np
import pytest
from conftest import random_task

from bayes_attn.network import HeadLayer
from bayes_attn.tasks import Task
from bayes_attn.theory import drop_head, evidence_head_selection, head_scores, log_evidence, normalize_scores


def test_per_layer_normalisation():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    U = A @ A.T
    raw = head_scores(U, (3, 2), normalize=False)
    per = head_scores(U, (3, 2), normalize="layer")
    glob = head_scores(U, (3, 2), normalize=True)
    assert [float(s.max()) for s in per] == [1.0, 1.0]
    for r, p, g in zip(raw, per, glob):
        np.testing.assert_allclose(p, r / r.max(), rtol=1e-14)
        np.testing.assert_allclose(g, r / max(x.max() for x in raw), rtol=1e-14)
    np.testing.assert_allclose(np.concatenate(normalize_scores(glob, "layer")), np.concatenate(per), rtol=1e-14)
    # eq. (4.8d): U = c I ties the heads of a layer at c n_pi / H_l before normalisation
    tie = head_scores(2.0 * np.eye(6), (3, 2), normalize=False)
    np.testing.assert_allclose(tie[0], 2.0 * 6 / 3)
    np.testing.assert_allclose(tie[1], 2.0 * 6 / 2)
    with pytest.raises(ValueError):
        normalize_scores(raw, "rows")


def _check_selection(heads):
    task = random_task(P=10, Q=4, S=3, n0=4, heads=heads, seed=7)
    spec = task.spec(width=12, temperature=0.2)
    stages = evidence_head_selection(spec, task.phi("train", spec), task.y_train, task.phi("test", spec), task.y_test)
    assert len(stages) == 1 + sum(H - 1 for H in heads)
    assert stages[0]["log_evidence"] == pytest.approx(log_evidence(task, spec).log_evidence, rel=1e-10)
    for st in stages[1:]:
        keep = drop_head(spec.heads, [tuple(r) for r in st["removed"]])
        layers = tuple(HeadLayer.w(np.asarray(layer.params["W"])[k], 1.0) for layer, k in zip(task.layers, keep))
        sub = Task(task.x_train, task.y_train, task.x_test, task.y_test, layers)
        ev = log_evidence(sub, sub.spec(width=12, temperature=0.2)).log_evidence
        assert st["log_evidence"] == pytest.approx(ev, rel=1e-8)
        # greedy: the chosen removal is the best candidate of its stage
        assert st["log_evidence"] == pytest.approx(max(st["candidates"].values()), rel=1e-12)


def test_evidence_head_selection_matches_subnetwork_tasks():
    """Each stage's evidence equals that of a task built from the kept heads only (eq. (4.6d) route)."""
    _check_selection((2, 1))


@pytest.mark.slow(seconds=45)
def test_evidence_head_selection_two_layers_of_several_heads():
    _check_selection((3, 2))
