"""Checkpoint files (bayes_attn.inference._checkpoint): each save appends the new draws as a part, a load gives back
exactly what was saved, a missing or short part is refused with one line, a part the main file does not count (a
kill between the two writes) is ignored, and removing a checkpoint removes its parts and stale temporaries.  The
runner's bit-exact resume for every sampler is tests/test_driver.py."""

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn.inference import _checkpoint as ckp

FP = "f" * 16
GROUPS = ("posterior", "sample_stats")


def _run(n_draws, rng):
    """Draws of a run so far: ``(chain, draw, ...)`` arrays that only grow along the draw axis."""
    return {
        "posterior": {"f": rng.standard_normal((2, n_draws, 5)), "U": rng.standard_normal((2, n_draws, 3, 3))},
        "sample_stats": {"lp": rng.standard_normal((2, n_draws))},
    }


def _grow(old, new_full, n):
    """``old`` with the draws ``n:`` of ``new_full`` appended (what the runner does after a chunk)."""
    return {g: {k: np.concatenate([old[g][k], new_full[g][k][:, n:]], axis=1) for k in old[g]} for g in old}


def _assert_same_draws(got, want):
    assert {g: set(d) for g, d in got.items()} == {g: set(d) for g, d in want.items()}
    for g, d in want.items():
        for k, v in d.items():
            np.testing.assert_array_equal(got[g][k], v)


def _continue(ck, more):
    """Save ``more`` as the next checkpoint of the run at ``ck``, as a resumed run does."""
    meta = ckp.load(ck, _carry(0), FP, GROUPS)[0]
    ckp.Writer(ck, meta["parts"], meta["lengths"]).save({"fingerprint": FP}, _carry(1), more)


def _carry(t):
    return {"x": np.full((2, 4), float(t)), "key": np.arange(4, dtype=np.uint32) + t}


def test_each_save_appends_only_the_new_draws_and_load_gives_them_back(tmp_path):
    ck = tmp_path / "run.ckpt.npz"
    rng = np.random.default_rng(0)
    full = _run(9, rng)
    w = ckp.Writer(ck)
    for t, n in enumerate((2, 5, 9)):
        groups = {g: {k: v[:, :n] for k, v in d.items()} for g, d in full.items()}
        w.save({"fingerprint": FP, "kept": n}, _carry(t), groups)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.ckpt.npz"] + [f"run.ckpt.npz.part{k}" for k in range(3)]
    with np.load(ckp.part_path(ck, 1)) as part:  # the second part holds draws 2..4 and nothing else
        np.testing.assert_array_equal(part["posterior__f"], full["posterior"]["f"][:, 2:5])
        np.testing.assert_array_equal(part["sample_stats__lp"], full["sample_stats"]["lp"][:, 2:5])
    part_bytes = sum(ckp.part_path(ck, k).stat().st_size for k in range(3))
    draw_bytes = sum(v.nbytes for d in full.values() for v in d.values())
    assert part_bytes < draw_bytes + 3 * 2000  # every draw written once (plus the npz headers)
    meta, carry, groups = ckp.load(ck, _carry(0), FP, GROUPS)
    assert meta["kept"] == 9 and meta["parts"] == 3
    np.testing.assert_array_equal(carry["x"], _carry(2)["x"])
    np.testing.assert_array_equal(carry["key"], _carry(2)["key"])
    _assert_same_draws(groups, full)


def test_a_loaded_checkpoint_continues_where_it_stopped(tmp_path):
    ck = tmp_path / "run.ckpt.npz"
    rng = np.random.default_rng(1)
    first = _run(3, rng)
    ckp.Writer(ck).save({"fingerprint": FP}, _carry(0), first)
    more = _grow(ckp.load(ck, _carry(0), FP, GROUPS)[2], _run(7, rng), 3)
    _continue(ck, more)
    meta, _, back = ckp.load(ck, _carry(0), FP, GROUPS)
    assert meta["parts"] == 2
    _assert_same_draws(back, more)


def test_an_uncounted_part_is_ignored_and_overwritten(tmp_path):
    """A kill after a part was written but before the main file counted it leaves the previous checkpoint whole."""
    ck = tmp_path / "run.ckpt.npz"
    rng = np.random.default_rng(2)
    groups = _run(4, rng)
    ckp.Writer(ck).save({"fingerprint": FP}, _carry(0), groups)
    ckp.part_path(ck, 1).write_bytes(b"half a part")  # the next part, never counted
    back = ckp.load(ck, _carry(0), FP, GROUPS)[2]
    np.testing.assert_array_equal(back["posterior"]["f"], groups["posterior"]["f"])
    more = _grow(back, _run(6, rng), 4)
    _continue(ck, more)
    np.testing.assert_array_equal(ckp.load(ck, _carry(0), FP, GROUPS)[2]["posterior"]["f"], more["posterior"]["f"])


@pytest.mark.parametrize("damage", ["missing", "truncated", "short"])
def test_a_missing_or_damaged_part_is_refused_with_one_line(tmp_path, damage):
    ck = tmp_path / "run.ckpt.npz"
    rng = np.random.default_rng(3)
    w = ckp.Writer(ck)
    full = _run(6, rng)
    for n in (3, 6):
        w.save({"fingerprint": FP}, _carry(0), {g: {k: v[:, :n] for k, v in d.items()} for g, d in full.items()})
    part = ckp.part_path(ck, 1)
    if damage == "missing":
        part.unlink()
    elif damage == "truncated":
        part.write_bytes(part.read_bytes()[:100])
    else:  # a readable part with fewer draws than the main file counts
        with open(part, "wb") as fh:  # (np.savez on a path would add ".npz" to its name)
            np.savez(fh, **{f"{g}__{k}": v[:, 3:5] for g, d in full.items() for k, v in d.items()})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(InputError, match=r"^resume: ") as exc:
        ckp.load(ck, _carry(0), FP, GROUPS)
    assert "\n" not in str(exc.value) and "run.ckpt.npz" in str(exc.value)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing deleted or rewritten


def test_remove_deletes_the_main_file_its_parts_and_stale_temporaries(tmp_path):
    ck = tmp_path / "run.ckpt.npz"
    rng = np.random.default_rng(4)
    w = ckp.Writer(ck)
    for n in (2, 4):
        w.save({"fingerprint": FP}, _carry(0), _run(n, rng))
    dead = 2**22 + 12345  # beyond Linux's default pid_max: no such process
    (tmp_path / f".run.ckpt.npz.part2.{dead}.tmp").write_bytes(b"cut by a kill")
    (tmp_path / f".run.ckpt.npz.{dead}.tmp").write_bytes(b"cut by a kill")
    (tmp_path / "run.ckpt.npz.partial-notes").write_bytes(b"not ours")
    (tmp_path / "other.ckpt.npz.part0").write_bytes(b"another run's part")
    ckp.remove_checkpoint(ck)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.ckpt.npz.part0", "run.ckpt.npz.partial-notes"]
