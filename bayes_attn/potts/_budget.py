"""What a pseudo-likelihood fit costs before it starts: its peak memory, the block of sites plmDCA is fitted
in, and its arithmetic (docs/potts_proteins.md §4, "Memory and blocks of sites").

**Memory model** (bytes of the fit's float type ``b``; constants measured with the peak resident size of
fits in float32 with 10 correction pairs, random sequences, L = 110 to 200, M = 1000 to 2000, on one core
and on two, and rounded up):

* every process: :data:`BASE_BYTES` (Python, JAX, XLA's compilation of the fit);
* the logits of one block of sequences: ``WORK_COPIES * rows * L * C * b`` (one-hot rows, logits, softmax,
  their gradients; ``rows`` = :func:`~bayes_attn.potts.block_rows`); a fit in blocks of sites keeps the
  one-hot sequences, ``M * L * C * b`` (twice while they are built), and logits of its block only;
* an L-BFGS state: ``(2 * memory + STATE_COPIES) * n * b`` for n parameters (the correction pairs, the
  parameters, gradient, search direction and the line search's trial points);
* factored attention forms its couplings every evaluation: ``FA_COUPLING_COPIES * L^2 C^2 b`` and, its
  parameters being fewer, :data:`FA_STATE_COPIES` copies in place of ``2 * memory + STATE_COPIES``.

plmDCA fitted in blocks of k sites (:func:`~bayes_attn.potts.fit_plmdca_sites`) holds its couplings once
(``L^2 C^2 b``) and the L-BFGS state of k L C^2 parameters.  *(project choice)* A protein fit takes the
largest block whose state is at most :data:`PLM_BLOCK_STATE` and whose whole estimate fits the budget
(:func:`plm_site_block`); a fit whose estimate exceeds the budget even one site at a time is refused
(:func:`require_fit_memory`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .._errors import InputError, one_of, positive
from .._memory import available_bytes
from ._pl import block_rows

BASE_BYTES = 850e6
WORK_COPIES = 4
STATE_COPIES = 16
FA_STATE_COPIES = 20
FA_COUPLING_COPIES = 11
#: at most this many bytes of L-BFGS state per block of sites of a protein plmDCA fit (project choice: it
#: halves the memory of the joint fit on the benchmark families, and keeps L = 1000 within 8 GB)
PLM_BLOCK_STATE = 256e6


def _bytes(dtype: str) -> int:
    one_of(dtype, ("float32", "float64"), "dtype")
    return 4 if dtype == "float32" else 8


def _work(L: int, C: int, M: int, b: int) -> float:
    return WORK_COPIES * block_rows(L, C, M) * L * C * b


def plm_memory(L: int, C: int, M: int, *, dtype: str = "float32", memory: int = 10, site_block: int = 0) -> float:
    """Estimated peak bytes of a plmDCA fit: joint (``site_block = 0``) or ``site_block`` sites at a time."""
    b = _bytes(dtype)
    copies = 2 * memory + STATE_COPIES
    if not site_block or site_block >= L:
        return BASE_BYTES + _work(L, C, M, b) + copies * (L * L * C * C + L * C) * b
    return _sites_fixed(L, C, M, b, site_block) + copies * site_block * (L * C * C + C) * b


def _sites_fixed(L: int, C: int, M: int, b: int, site_block: int) -> float:
    """Bytes of a fit in blocks of sites besides the block's L-BFGS state: the couplings once, the one-hot
    sequences (twice while they are built), a block's logits."""
    return BASE_BYTES + L * L * C * C * b + 2 * M * L * C * b + WORK_COPIES * M * site_block * C * b


def fa_memory(L: int, C: int, M: int, heads: int, *, dtype: str = "float32") -> float:
    """Estimated peak bytes of a factored-attention fit of ``heads`` heads."""
    b = _bytes(dtype)
    n = heads * (L * L + C * C) + L * C
    return BASE_BYTES + _work(L, C, M, b) + FA_STATE_COPIES * n * b + FA_COUPLING_COPIES * L * L * C * C * b


def plm_site_block(L: int, C: int, M: int, *, dtype: str = "float32", memory: int = 10, budget: float) -> int:
    """Sites per block of a protein plmDCA fit: the largest k <= L whose L-BFGS state is at most
    :data:`PLM_BLOCK_STATE` and whose estimate is at most ``budget`` bytes; 0 (refuse) when not even one site
    fits.  k = L is the joint fit."""
    b = _bytes(dtype)
    per_site = (2 * memory + STATE_COPIES) * (L * C * C + C) * b
    k = min(L, max(1, int(PLM_BLOCK_STATE // per_site)))
    while k >= 1 and _sites_fixed(L, C, M, b, k) + k * per_site > budget:
        k -= 1
    return k


def memory_budget(max_memory_gb: float | None) -> float:
    """The bytes a fit may take: ``max_memory_gb`` (GB) if given, never more than the memory available now."""
    have = available_bytes()
    if max_memory_gb is not None:
        positive(max_memory_gb, "max-memory")
        want = float(max_memory_gb) * 1e9
        return want if have is None else min(want, have)
    return float("inf") if have is None else float(have)


def require_fit_memory(need: float, budget: float, what: str) -> None:
    """One line naming ``--max-memory`` when the estimate ``need`` exceeds ``budget`` (exit 2 at the CLI)."""
    if need > budget:
        raise InputError(
            f"max-memory: {what} needs about {need / 1e9:.1f} GB, the budget is {budget / 1e9:.1f} GB "
            "(--max-memory, or the memory available)",
            "max-memory",
        )


def fit_multiply_adds(L: int, C: int, M: int) -> float:
    """Multiply-adds of one evaluation of the objective and its gradient on the coupling route (plmDCA, and
    factored attention on protein families): the logits and the coupling gradient, two dense products of
    (M, L C) by (L C, L C) (docs/potts_proteins.md §4)."""
    return 2.0 * M * (L * C) ** 2


def matmul_rate(n: int = 1024, reps: int = 3) -> float:
    """Multiply-adds per second of one float32 matrix product on this machine (median of ``reps``)."""
    import jax
    import jax.numpy as jnp

    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f(a).block_until_ready()
        ts.append(time.perf_counter() - t)
    return n**3 / max(float(np.median(ts)), 1e-9)


def format_bytes(x: float) -> str:
    """``1.2 GB`` (decimal units, as the refusals)."""
    return f"{x / 1e9:.1f} GB" if math.isfinite(x) else "unbounded"


__all__ = [
    "PLM_BLOCK_STATE",
    "plm_memory",
    "fa_memory",
    "plm_site_block",
    "memory_budget",
    "require_fit_memory",
    "fit_multiply_adds",
    "matmul_rate",
    "format_bytes",
]
