"""Vanilla transformer baseline (potts.md §7.2): exact masked PL evaluation and training."""

import jax
import numpy as np

import bayes_attn  # noqa: F401
from bayes_attn.potts import (
    TransformerConfig,
    fit_transformer,
    init_transformer,
    transformer_logits,
    transformer_pl_loss,
)


def test_exact_pl_equals_masking_each_position():
    cfg = TransformerConfig(L=5, C=3, d_model=8, layers=2, heads=2)
    p = init_transformer(jax.random.PRNGKey(0), cfg)
    s = np.random.default_rng(0).integers(0, 3, (7, 5))
    tot = 0.0
    for m in range(7):
        for i in range(5):
            t = s[m].copy()
            t[i] = 3
            z = transformer_logits(p, t[None], 2)[0, i]
            tot -= float(jax.nn.log_softmax(z)[s[m, i]])
    assert np.isclose(transformer_pl_loss(p, s, 2, chunk=3), tot / 35, rtol=1e-10)


def test_training_learns_a_copy_rule():
    """s_1 = s_0 always: a trained model must predict the masked one from the other (loss << log C)."""
    rng = np.random.default_rng(1)
    s = rng.integers(0, 4, (600, 3))
    s[:, 1] = s[:, 0]
    cfg = TransformerConfig(L=3, C=4, d_model=16, layers=1, heads=2, steps=300, eval_every=150, lr=1e-2, warmup=20)
    p, hist = fit_transformer(jax.random.PRNGKey(0), s[:500], s[500:], cfg)
    # sites 0 and 1 become deterministic, site 2 stays uniform: optimum (2*0 + log 4)/3
    assert hist[-1][2] < 0.5 * np.log(4)
