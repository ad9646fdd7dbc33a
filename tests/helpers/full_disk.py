"""A disk that fills up, for the tests of what EduFair does when it cannot write.

Where the test may mount file systems (root, as on this machine and CI), a size-limited tmpfs
(``mount -t tmpfs -o size=N``): the kernel's own ENOSPC, and SQLite's own SQLITE_FULL. Elsewhere
a shim with the same effect, never a skip: for Python's file writes (lm-eval writes its results
and samples with ``open``/``Path.write_text``), ``sitecustomize`` of :data:`SHIM_DIR` on the child's
PYTHONPATH makes every write under ``EDUFAIR_TEST_FULL_DIR`` past ``EDUFAIR_TEST_FULL_BYTES``
bytes raise ``OSError(ENOSPC)``; for SQLite, ``PRAGMA max_page_count`` (SQLite's SQLITE_FULL,
"database or disk is full"). Each test says in its docstring which one it met. Always unmounted
in teardown.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

SHIM_DIR = Path(__file__).resolve().parent / "enospc_shim"


def _mount(path: Path, size: str) -> bool:
    if os.environ.get("EDUFAIR_TEST_NO_MOUNT") or os.geteuid() != 0 or shutil.which("mount") is None:
        return False  # (EDUFAIR_TEST_NO_MOUNT=1 runs the shims where mounting would work)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return r.returncode == 0


@contextlib.contextmanager
def small_disk(path: Path, size: str = "200k") -> Iterator[bool]:
    """``path`` (created) on a tmpfs of ``size`` when mounting works: yields True; else yields
    False (the caller applies its shim). Unmounted on exit."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = _mount(path, size)
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(path: Path, leave_bytes: int) -> Path:
    """Fill the file system of ``path`` with one file until about ``leave_bytes`` are free."""
    filler = path / "filler.bin"
    free = shutil.disk_usage(path).free
    with open(filler, "wb") as fh:
        fh.write(b"\0" * max(0, free - leave_bytes))
    return filler


def shim_env(env: dict[str, str], folder: Path, budget: int) -> dict[str, str]:
    """``env`` with the ENOSPC write shim on for writes under ``folder`` past ``budget`` bytes."""
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join([str(SHIM_DIR), env.get("PYTHONPATH", "")])
    out["EDUFAIR_TEST_FULL_DIR"] = str(folder)
    out["EDUFAIR_TEST_FULL_BYTES"] = str(budget)
    return out
