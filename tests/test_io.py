"""bayes_attn._io: temporaries left by a killed writer are removed; a live writer's are not."""

import os
import subprocess
import sys

from bayes_attn._io import remove_stale_temporaries, temporary_path


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "run.nc.ckpt.npz"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_tmp = tmp_path / f".{target.name}.{int(dead.stdout)}.tmp"   # its process has exited
    live_tmp = tmp_path / f".{target.name}.{os.getppid()}.tmp"       # pytest's parent is alive
    own_tmp = temporary_path(target)                                  # this process's own write
    other = tmp_path / f".other.nc.{int(dead.stdout)}.tmp"           # another file's temporary
    for p in (dead_tmp, live_tmp, own_tmp, other, target):
        p.write_bytes(b"x")
    assert own_tmp.name == f".{target.name}.{os.getpid()}.tmp"
    assert remove_stale_temporaries(target) == [dead_tmp]
    assert not dead_tmp.exists() and live_tmp.exists() and own_tmp.exists() and other.exists() and target.exists()
    assert remove_stale_temporaries(target) == []
