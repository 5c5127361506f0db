"""Equilibration diagnostics and tuning of beta to a target mean Hamming distance (potts.md §2.2-2.3).

Project choices: D is computed over distinct pairs of samples taken at the same sweep from
independent PT systems and averaged over the snapshots of the second half of the run; beta is
bracketed on a PT ladder (D at every rung of one run), then log(beta) is bisected inside the
bracket with a fresh PT run per candidate (ladder from ``beta_min`` up to the candidate).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import arviz as az
import jax
import numpy as np

from .._errors import positive, require
from ._mc import MCResult, geometric_ladder, greedy_ground_state, parallel_tempering


def hamming_distance(samples, C: int) -> float:
    """Mean normalised Hamming distance over distinct pairs of ``samples`` (M, L) (§2.3), O(M L C)."""
    s = np.asarray(samples)
    M, L = s.shape
    require(M >= 2, "samples", f"need >= 2 sequences, got {M}")
    n = np.stack([np.bincount(s[:, i], minlength=C) for i in range(L)])  # (L, C)
    same = (n * (n - 1)).sum() / (M * (M - 1) * L)
    return float(1.0 - same)


def _per_snapshot_D(snaps, C):
    """D over systems at each snapshot: snaps (n, M, L) -> (n,)."""
    return np.array([hamming_distance(x, C) for x in snaps])


@dataclass(frozen=True)
class EquilibrationReport:
    """Checks of §2.2 for one recorded rung; ``passed`` requires all gates."""

    beta: float
    D: float
    D_se: float
    energy_per_site: float
    halves_energy: tuple
    halves_D: tuple
    rhat_energy: float
    rhat_freq_max: float
    swap_acc: np.ndarray
    round_trips: float
    other_init: dict = field(default_factory=dict)
    failures: tuple = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    def summary(self) -> dict:
        return {
            "beta": self.beta,
            "D": self.D,
            "D_se": self.D_se,
            "energy_per_site": self.energy_per_site,
            "halves_energy": list(self.halves_energy),
            "halves_D": list(self.halves_D),
            "rhat_energy": self.rhat_energy,
            "rhat_freq_max": self.rhat_freq_max,
            "swap_acc_min": float(self.swap_acc.min()) if self.swap_acc.size else None,
            "round_trips_mean": self.round_trips,
            "other_init": self.other_init,
            "passed": self.passed,
            "failures": list(self.failures),
        }


def diagnose(
    res: MCResult,
    C: int,
    burn_blocks: int,
    *,
    other: MCResult | None = None,
    rung: int = -1,
    rhat_max: float = 1.01,
    swap_min: float = 0.1,
    tol_D: float = 0.02,
    tol_E: float = 0.02,
) -> EquilibrationReport:
    """Equilibration checks (§2.2) on rung ``rung`` after ``burn_blocks``: flat halves (energy per
    site and D), R-hat (ArviZ, chains = PT systems) of the energy and of the site-colour
    indicators of each site's modal colour, swap acceptance, round trips, and agreement with a
    run ``other`` from a different initialisation."""
    L = res.snapshots.shape[-1]
    snaps = res.snapshots[burn_blocks:, rung]  # (n, M, L)
    E = res.energy[burn_blocks:, rung] / L  # (n, M)
    n = snaps.shape[0]
    require(n >= 4, "burn_blocks", f"need >= 4 recorded blocks after burn-in, got {n}")
    Ds = _per_snapshot_D(snaps, C)
    h = n // 2
    halves_E = (float(E[:h].mean()), float(E[h:].mean()))
    halves_D = (float(Ds[:h].mean()), float(Ds[h:].mean()))
    rhat_E = float(az.rhat(np.ascontiguousarray(E.T)))
    modal = np.array([np.bincount(snaps[..., i].ravel(), minlength=C).argmax() for i in range(L)])
    ind = (snaps == modal).astype(float).transpose(1, 0, 2)  # (M chains, n draws, L)
    rh = np.asarray(az.rhat(ind), float)
    rhat_f = float(np.nanmax(rh)) if np.isfinite(rh).any() else float("nan")
    fails = []
    if abs(halves_E[0] - halves_E[1]) > tol_E:
        fails.append(f"energy/site halves differ: {halves_E[0]:.4f} vs {halves_E[1]:.4f}")
    if abs(halves_D[0] - halves_D[1]) > tol_D:
        fails.append(f"D halves differ: {halves_D[0]:.3f} vs {halves_D[1]:.3f}")
    if not rhat_E < rhat_max:
        fails.append(f"R-hat(energy) {rhat_E:.4f} >= {rhat_max}")
    if res.swap_acc.size and res.swap_acc.min() < swap_min:
        fails.append(f"min swap acceptance {res.swap_acc.min():.3f} < {swap_min}")
    oth = {}
    if other is not None:
        oE = float(other.energy[burn_blocks:, rung].mean() / L)
        oD = float(_per_snapshot_D(other.snapshots[burn_blocks:, rung], C).mean())
        oth = {"energy_per_site": oE, "D": oD}
        if abs(oE - E.mean()) > tol_E or abs(oD - Ds.mean()) > tol_D:
            fails.append(f"initialisations disagree: E/site {E.mean():.4f} vs {oE:.4f}, D {Ds.mean():.3f} vs {oD:.3f}")
    return EquilibrationReport(
        float(res.betas[rung]),
        float(Ds.mean()),
        float(Ds.std(ddof=1) / np.sqrt(n)),
        float(E.mean()),
        halves_E,
        halves_D,
        rhat_E,
        rhat_f,
        res.swap_acc,
        float(res.round_trips.mean()),
        oth,
        tuple(fails),
    )


@dataclass(frozen=True)
class TuneResult:
    """The result of :func:`tune_beta`: the inverse temperature found and its mean Hamming distance ``D``, the
    ladder's ``beta`` and ``D`` grid, every bisection step, and whether ``D`` decreased along the ladder."""

    beta: float
    D: float
    grid_betas: np.ndarray
    grid_D: np.ndarray
    history: list  # (beta, D) of every bisection step
    monotone: bool


def tune_beta(
    key,
    J,
    U,
    h=None,
    *,
    target: float = 0.3,
    tol: float = 0.01,
    beta_min: float = 0.8,
    beta_max: float = 4.0,
    rungs: int = 16,
    systems: int = 100,
    sweeps: int = 600,
    thin: int = 10,
    max_iter: int = 8,
    progress=None,
) -> TuneResult:
    """Bracket beta with D(target) on one PT ladder, then bisect log(beta) until |D - target| <= tol (§2.3)."""
    positive(target, "target")
    positive(tol, "tol")
    C = np.asarray(U).shape[0]
    n_blocks = max(sweeps // thin, 4)
    burn = n_blocks // 3
    ladder = geometric_ladder(beta_min, beta_max, rungs)
    key, k = jax.random.split(key)
    res = parallel_tempering(k, J, U, h, ladder, systems, n_blocks=n_blocks, thin=thin, burn_blocks=burn)
    gD = np.array([_per_snapshot_D(res.snapshots[burn:, r], C).mean() for r in range(rungs)])
    monotone = bool(np.all(np.diff(gD) < 0.02))  # decreasing up to MC noise
    below = np.flatnonzero(gD <= target)
    require(
        below.size > 0 and gD[0] > target,
        "beta_max",
        f"D={target} not bracketed on [{beta_min}, {beta_max}] (D from {gD[0]:.3f} to {gD[-1]:.3f})",
    )
    k_hi = int(below[0])
    lo, hi = np.log(ladder[k_hi - 1]), np.log(ladder[k_hi])
    hist = []
    beta, D = float(ladder[k_hi]), float(gD[k_hi])
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        beta = float(np.exp(mid))
        key, k = jax.random.split(key)
        r = parallel_tempering(
            k, J, U, h, geometric_ladder(beta_min, beta, rungs), systems, n_blocks=n_blocks, thin=thin, burn_blocks=burn
        )
        D = float(_per_snapshot_D(r.snapshots[burn:, -1], C).mean())
        hist.append((beta, D))
        if progress:
            progress(beta, D)
        if abs(D - target) <= tol:
            break
        lo, hi = (mid, hi) if D > target else (lo, mid)
    return TuneResult(beta, D, ladder, gD, hist, monotone)


def equilibrium_samples(
    key,
    J,
    U,
    h,
    beta: float,
    n: int,
    *,
    beta_min: float = 0.8,
    rungs: int = 16,
    systems: int = 200,
    burn_sweeps: int = 1000,
    thin: int = 10,
    check_other: bool = True,
):
    """``n`` PT samples at ``beta`` (top rung), ``systems`` independent PT systems snapshotted every
    ``thin`` sweeps after ``burn_sweeps``; returns (samples (n, L) shuffled, report)."""
    positive(n, "n", integer=True)
    C = np.asarray(U).shape[0]
    keep = -(-n // systems)
    burn = max(burn_sweeps // thin, 1)
    ladder = geometric_ladder(beta_min, beta, rungs)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    res = parallel_tempering(k1, J, U, h, ladder, systems, n_blocks=burn + keep, thin=thin, burn_blocks=burn)
    other = None
    if check_other:
        gs = greedy_ground_state(k2, J, U, h)
        m2 = max(systems // 4, 8)
        other = parallel_tempering(
            k3,
            J,
            U,
            h,
            ladder,
            m2,
            n_blocks=burn + max(keep, 4),
            thin=thin,
            burn_blocks=burn,
            s0=np.broadcast_to(gs, (m2, gs.size)),
        )
    rep = diagnose(res, C, burn if keep >= 4 else max(burn - 4, 0), other=other)
    samples = np.asarray(jax.random.permutation(k4, res.samples))[:n]
    return samples, rep


__all__ = ["hamming_distance", "EquilibrationReport", "diagnose", "TuneResult", "tune_beta", "equilibrium_samples"]
