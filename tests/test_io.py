"""bayes_attn._io: the one home of atomic writes; temporaries left by a killed writer are removed, a live
writer's are not."""

import os
import subprocess
import json
import sys

import numpy as np
import pytest

from bayes_attn import InputError
from bayes_attn._io import (
    atomic_savez,
    atomic_write,
    atomic_write_bytes,
    atomic_write_json,
    remove_stale_temporaries,
    temporary_path,
)


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "run.nc.ckpt.npz"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead_tmp = tmp_path / f".{target.name}.{int(dead.stdout)}.tmp"  # its process has exited
    live_tmp = tmp_path / f".{target.name}.{os.getppid()}.tmp"  # pytest's parent is alive
    own_tmp = temporary_path(target)  # this process's own write
    other = tmp_path / f".other.nc.{int(dead.stdout)}.tmp"  # another file's temporary
    for p in (dead_tmp, live_tmp, own_tmp, other, target):
        p.write_bytes(b"x")
    assert own_tmp.name == f".{target.name}.{os.getpid()}.tmp"
    assert remove_stale_temporaries(target) == [dead_tmp]
    assert not dead_tmp.exists() and live_tmp.exists() and own_tmp.exists() and other.exists() and target.exists()
    assert remove_stale_temporaries(target) == []


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "sub" / "out.json"
    atomic_write_json(target, {"a": np.float32(0.5), "n": np.int64(3), "x": np.arange(3), "ok": np.bool_(True)})
    assert json.loads(target.read_text()) == {"a": 0.5, "n": 3, "x": [0, 1, 2], "ok": True}

    def half_then_fail(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write(target, half_then_fail)
    assert json.loads(target.read_text())["n"] == 3 and not list(target.parent.glob(".*.tmp"))

    atomic_savez(tmp_path / "a.npz", x=np.eye(2))
    np.testing.assert_array_equal(np.load(tmp_path / "a.npz")["x"], np.eye(2))
    assert atomic_write_bytes(tmp_path / "b.bin", b"xyz").read_bytes() == b"xyz"


def test_atomic_write_to_a_path_under_a_file_is_one_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"^checkpoint: cannot write .*file/x\.bin"):
        atomic_write_bytes(tmp_path / "file" / "x.bin", b"1", field="checkpoint")


WITHOUT_DASK = r"""
import sys
import numpy as np
import xarray as xr
from bayes_attn._io import without_dask
from bayes_attn.inference._output import write_netcdf

path = sys.argv[1]
with without_dask():
    ds = xr.Dataset({"a": ("x", np.arange(3.0))}, coords={"x": [10, 20, 30]})
    write_netcdf(ds, path)
assert "dask" not in sys.modules and "distributed" not in sys.modules, sorted(m for m in sys.modules if "dask" in m)
back = xr.open_dataset(path, engine="h5netcdf")
assert back["a"].values.tolist() == [0.0, 1.0, 2.0] and back["x"].values.tolist() == [10, 20, 30]
back.close()
# after the context xarray looks dask up again: a dask array is recognised as one
import dask.array as da
assert xr.DataArray(da.zeros(4, chunks=2)).chunks == ((2, 2),)
with without_dask():  # dask imported: nothing is changed
    assert xr.DataArray(da.zeros(4, chunks=2)).chunks == ((2, 2),)
print("ok")
"""


def test_without_dask_writes_netcdf_without_importing_dask(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_DASK, str(tmp_path / "a.nc")], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_theory_and_sample_commands_run_without_dask():
    from bayes_attn.cli._main import build_parser

    parser = build_parser()
    assert parser.parse_args(["theory", "c.toml", "--out", "o.nc"]).without_dask
    assert parser.parse_args(["sample", "c.toml", "--out", "o.nc"]).without_dask
    assert not getattr(parser.parse_args(["sweep", "c.toml", "--out", "d"]), "without_dask", False)  # sweeps use dask
