"""Posterior mean attention maps of the sampled Markov runs next to the task's hand-built heads (one test sequence).

Reads the ``*_maps_*.npz`` files that ``run.py`` writes next to its JSON (posterior means of ``attention_1``,
``attention_2`` over every chain and draw, for the first test sequences) and draws, for test sequence ``--index``,
every head of layer 1 and the readout query's column of layer 2, with the hand-built heads of the same sequence
in the first row.  Does the posterior find the "good" head (attention to the previous position)?

    python benchmarks/attention/maps_figure.py benchmarks/attention/cpu_gp_maps_*.npz --out docs/figures/attention_posterior_maps.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("maps", nargs="+", help="npz files written by run.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--index", type=int, default=0, help="which stored test sequence")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import bayes_attn  # noqa: F401
    from bayes_attn.tasks import markov_task

    task = markov_task(P=100, n_test=1000, paths=4)
    hand = [np.asarray(o)[args.index] for o in task.omegas("test")]  # (H, S, S) per layer
    rows = [("hand-built", hand[0], hand[1][..., -1])]
    for f in args.maps:
        with np.load(f) as z:
            rows.append(
                (Path(f).stem.split("_maps_")[-1], z["attention_1"][args.index], z["attention_2"][args.index][..., -1])
            )
    H1, H2 = hand[0].shape[0], hand[1].shape[0]
    fig, axes = plt.subplots(len(rows), H1 + 1, figsize=(3.2 * (H1 + 1), 3.0 * len(rows)), squeeze=False)
    for r, (name, a1, a2) in enumerate(rows):
        for h in range(H1):
            ax = axes[r, h]
            ax.imshow(a1[h], cmap="viridis", vmin=0, vmax=1, origin="lower")
            ax.set_title(f"{name}: layer 1, head {h + 1}", fontsize=8)
            ax.set_xlabel("query t")
            ax.set_ylabel("key s")
        ax = axes[r, H1]
        for h in range(H2):
            ax.plot(a2[h], label=f"head {h + 1}")
        ax.set_ylim(0, 1)
        ax.set_title(f"{name}: layer 2, last query", fontsize=8)
        ax.set_xlabel("key s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=80)


if __name__ == "__main__":
    main()
