"""Theory vs sampling (docs/theory.md §5.3, §6.14): the gap between the sampled and the
theoretical predictor mean shrinks as the width grows at fixed load alpha = P/N.

Sampler: the exact finite-width order-parameter posterior (``model = "order_parameters"``, §5.2), 4 chains.
Seeds: data seed 3 (``random_task``), sampler seed 0.
"""

import numpy as np
import pytest
from conftest import random_task

from bayes_attn.inference import SamplerConfig, predictor_statistics, sample
from bayes_attn.theory import predict, solve

ALPHA = 0.5


def _gap(N):
    P = int(ALPHA * N)
    task = random_task(P=P, Q=20, S=3, n0=4, heads=(2,), seed=3)
    spec = task.spec(width=N, temperature=0.05)
    sol = solve(spec, task.phi("train", spec), task.y_train)
    assert sol.status.ok
    m_t, _ = predict(sol.U, task.phi("train", spec), task.phi("test", spec), task.y_train, spec.temperature)
    cfg = SamplerConfig(model="order_parameters", chains=4, warmup=300, draws=600, seed=0, progress_bar=False)
    stats = predictor_statistics(sample(task, spec, cfg))
    m_t = np.asarray(m_t)
    return float(np.sqrt(np.mean((stats["mean"] - m_t) ** 2) / np.mean(m_t**2)))


@pytest.mark.slow
def test_gap_shrinks_with_width():
    gaps = {N: _gap(N) for N in (25, 200)}
    print("relative rms gap of the predictor mean:", gaps)
    assert gaps[200] < 0.5 * gaps[25]
    assert gaps[200] < 0.05
