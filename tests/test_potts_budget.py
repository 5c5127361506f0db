"""Memory and arithmetic of a fit before it starts (bayes_attn.potts._budget; docs/potts_proteins.md §4)."""

import json
import os
import subprocess
import sys

import pytest

from bayes_attn import InputError
from bayes_attn.potts import (
    PLM_BLOCK_STATE,
    fa_memory,
    fit_multiply_adds,
    memory_budget,
    plm_memory,
    plm_site_block,
    require_fit_memory,
)
from bayes_attn.potts._budget import STATE_COPIES

PEAK = """
import json, resource, sys
import numpy as np, jax.numpy as jnp
from bayes_attn.potts import fit_plmdca
L, M, k = map(int, sys.argv[1:4])
s = np.random.default_rng(0).integers(0, 21, (M, L))
fit_plmdca(s, 21, 1e-3, max_iter=4, tol=0.0, rtol=0.0, dtype=jnp.float32, memory=10, site_block=k)
# this process's own high-water mark (VmHWM, Linux): ru_maxrss keeps the parent's across fork and exec
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print(json.dumps(int(hwm[0].split()[1]) * 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))
"""


@pytest.mark.parametrize("L, M, k", [(110, 1000, 0), (110, 1000, 12)])
def test_the_estimate_covers_the_measured_peak_and_is_not_far_above_it(L, M, k):
    # a user's process: without the test session's XLA flags (one thread, level 0, four host devices) and cache
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "BAYES_ATTN_CACHE_DIR")}
    out = subprocess.run(
        [sys.executable, "-c", PEAK, str(L), str(M), str(k)], capture_output=True, text=True, check=True, env=env
    )
    peak = json.loads(out.stdout.strip().splitlines()[-1])
    est = plm_memory(L, 21, M, dtype="float32", memory=10, site_block=k)
    assert peak <= est <= 1.6 * peak, (peak, est)


def test_blocks_of_sites_hold_the_couplings_once():
    L, C, M = 474, 21, 4422
    joint = plm_memory(L, C, M)
    k = plm_site_block(L, C, M, budget=8e9)
    blocks = plm_memory(L, C, M, site_block=k)
    assert 1 <= k < L and blocks < joint / 4
    # the state of a block is within the cap, and one more site would pass it
    per_site = (2 * 10 + STATE_COPIES) * (L * C * C + C) * 4
    assert k * per_site <= PLM_BLOCK_STATE < (k + 1) * per_site
    # the difference between two block sizes is exactly their optimiser states
    assert plm_memory(L, C, M, site_block=k + 1) - blocks > per_site


def test_the_block_shrinks_to_the_budget_and_zero_means_it_cannot_fit():
    L, C, M = 474, 21, 4422
    big = plm_site_block(L, C, M, budget=8e9)
    need = plm_memory(L, C, M, site_block=big)
    small = plm_site_block(L, C, M, budget=need - 1)
    assert small == big - 1 and plm_memory(L, C, M, site_block=small) <= need - 1
    assert plm_site_block(L, C, M, budget=plm_memory(L, C, M, site_block=1) - 1) == 0
    # a small family with room is fitted whole (k = L: the joint fit)
    assert plm_site_block(20, C, 500, budget=8e9) == 20


def test_estimates_grow_with_size_and_precision():
    assert plm_memory(200, 21, 1000, dtype="float64") > plm_memory(200, 21, 1000)
    assert fa_memory(200, 21, 1000, 256) > fa_memory(200, 21, 1000, 32) > fa_memory(100, 21, 1000, 32)
    assert fit_multiply_adds(100, 21, 1000) == 2 * 1000 * 2100**2


def test_budget_and_refusal():
    assert memory_budget(1.5) <= 1.5e9
    with pytest.raises(InputError, match="max-memory"):
        memory_budget(0)
    require_fit_memory(1e9, 2e9, "x")
    with pytest.raises(InputError, match=r"max-memory: plmDCA .* needs about 3\.0 GB, the budget is 2\.0 GB"):
        require_fit_memory(3e9, 2e9, "plmDCA at L = 9")
