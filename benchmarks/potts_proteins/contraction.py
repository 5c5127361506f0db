"""Cost of the two contractions of factored attention's logits (docs/potts_proteins.md §4): head by head
(a gather, M H L^2 C multiply-adds) against forming K = sum_h A^h (x) V^h and one dense product (M L^2 C^2).
Times one jitted value-and-gradient of the PL of each route at protein size, and the ratio per multiply-add
that ``bayes_attn.potts._pl.GATHER_COST`` stands for.  Writes ``contraction.json``.

    python benchmarks/potts_proteins/contraction.py [--M 2000 --L 135 --heads 4 32]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from bayes_attn._io import atomic_write_json  # noqa: E402
from bayes_attn.potts import FAConfig, fa_init, to_blocks  # noqa: E402
from bayes_attn.potts._attention import _fa_objective, _fa_objective_couplings  # noqa: E402


def median_time(f, *args, reps=3):
    jax.block_until_ready(f(*args))
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--M", type=int, default=2000)
    ap.add_argument("--L", type=int, default=135)
    ap.add_argument("--C", type=int, default=21)
    ap.add_argument("--heads", type=int, nargs="+", default=[4, 32])
    ap.add_argument("--out", default=str(HERE / "contraction.json"))
    a = ap.parse_args(argv)
    s = np.random.default_rng(0).integers(0, a.C, (a.M, a.L))
    sb, wb = to_blocks(s, None, C=a.C, dtype=jnp.float32)
    rows = []
    for H in a.heads:
        p = jax.tree.map(
            lambda x: jnp.asarray(x, jnp.float32), fa_init(jax.random.PRNGKey(0), FAConfig(a.L, a.C, heads=H))
        )
        lam = jnp.float32(1e-4)
        t_heads = median_time(jax.jit(jax.value_and_grad(_fa_objective)), p, sb, wb, lam, lam, lam)
        t_coup = median_time(jax.jit(jax.value_and_grad(_fa_objective_couplings)), p, sb, wb, lam, lam, lam)
        per_gather = t_heads / (a.M * H * a.L**2 * a.C)
        per_dense = t_coup / (a.M * a.L**2 * a.C**2)
        rows.append(
            {
                "heads": H,
                "heads_route_s": t_heads,
                "couplings_route_s": t_coup,
                "speedup": t_heads / t_coup,
                "gather_cost_ratio": per_gather / per_dense,
            }
        )
        print(
            f"H={H}: heads route {t_heads:.3f} s, coupling route {t_coup:.3f} s "
            f"({t_heads / t_coup:.1f}x); cost per gathered multiply-add / per dense one = {per_gather / per_dense:.1f}",
            flush=True,
        )
    atomic_write_json(a.out, {"M": a.M, "L": a.L, "C": a.C, "rows": rows})


if __name__ == "__main__":
    main()
