"""The call cache when its disk fills or its file is damaged: a full disk keeps the
answers in memory for the run (said once, the file stays a valid database), and a file that is
not a valid database is refused in one line, checked and repaired by ``edufair cache``, never
overwritten."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from edufair_metrics.cache import CallCache
from edufair_metrics.cli import main as edufair
from edufair_metrics.errors import EduFairError
from tests.helpers.full_disk import small_disk


def _key(i: int) -> dict:
    return {"namespace": "tutor", "model": "m", "prompt": f"question {i}"}


def _fill_until_full(cache: CallCache, n: int = 400) -> int:
    for i in range(n):
        assert cache.put(_key(i), f"answer {i} " + "x" * 3000)  # never raises, never "not stored"
    return n


@pytest.fixture
def full_cache(tmp_path, monkeypatch):
    """A cache file on a full disk: a 200 KiB tmpfs where mounting works, else SQLite's own
    SQLITE_FULL through ``PRAGMA max_page_count`` on every connection (the shim)."""
    disk = tmp_path / "disk"
    with small_disk(disk, "200k") as mounted:
        if not mounted:
            original = CallCache._conn

            def capped(self):
                conn = original(self)
                conn.execute("PRAGMA max_page_count=48")
                return conn

            monkeypatch.setattr(CallCache, "_conn", capped)
        yield disk / "edufair-calls.sqlite", mounted


def test_a_full_disk_keeps_answers_in_memory_says_so_once_and_the_file_stays_valid(full_cache, capsys):
    """tmpfs of 200 KiB (or max_page_count where mounting fails): every answer of the run is still
    found, one line says the cache is full and where, counts and the judge's puts never raise."""
    path, _mounted = full_cache
    cache = CallCache(path)
    n = _fill_until_full(cache)
    assert cache.unstored > 0, "the disk never filled"
    for i in range(n):  # every answer received is there for the rest of the run
        assert cache.get(_key(i)) == f"answer {i} " + "x" * 3000
    cache.save_run_counts("run", "p1", {"tutor": {"role": "tutor", "sends": 3}})  # no raise
    cache.finish_run_counts("run", "p1", {"tutor": {"role": "tutor", "sends": 3}})
    assert cache.earlier_run_counts("run", "p2") in ([], [{"tutor": {"role": "tutor", "sends": 3}}])
    cache.close()
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "call cache" in ln]
    assert len(lines) == 1, err
    assert str(path) in lines[0] and "full" in lines[0] and "memory" in lines[0]
    assert "Traceback" not in err and "cannot rollback" not in err
    conn = sqlite3.connect(path)  # a valid database holding what was committed
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
    conn.close()
    assert 0 < stored == n - cache.unstored
    with CallCache(path) as again:  # a rerun finds every committed answer
        assert again.get(_key(0)) == "answer 0 " + "x" * 3000


def _good_cache(path: Path, n: int = 300) -> None:
    with CallCache(path) as c:
        for i in range(n):
            c.put(_key(i), f"answer {i} " + "y" * 500)
        c._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")


DAMAGE = {
    "not_sqlite": lambda b: b"this is a text file, not a database\n" * 50,
    "truncated": lambda b: b[: len(b) // 2],
    "malformed": lambda b: b[: 4096 * 2] + os.urandom(4096 * 4) + b[4096 * 6:],
    "zero_header": lambda b: b"\0" * 100 + b[100:],
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_cache_is_one_line_never_overwritten_and_repair_keeps_what_reads(tmp_path, damage, capsys):
    path = tmp_path / "edufair-calls.sqlite"
    _good_cache(tmp_path / "good.sqlite")
    path.write_bytes(DAMAGE[damage]((tmp_path / "good.sqlite").read_bytes()))
    before = path.read_bytes()
    with pytest.raises(EduFairError) as err:
        CallCache(path)
    line = str(err.value)
    assert "\n" not in line and str(path) in line and "edufair cache --repair" in line, line
    assert path.read_bytes() == before  # nothing was changed

    assert edufair(["cache", "--check", "--path", str(path)]) == 1
    out = capsys.readouterr().out
    assert str(path) in out and "--repair" in out
    assert path.read_bytes() == before  # --check only reads

    assert edufair(["cache", "--repair", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("edufair-calls.sqlite.damaged-")
             and not p.name.endswith(("-wal", "-shm"))]  # (its -wal/-shm, if any, moved with it)
    assert len(aside) == 1 and aside[0].read_bytes() == before and str(aside[0]) in out  # moved, not deleted
    assert not [p for p in tmp_path.iterdir() if ".padded" in p.name]
    assert edufair(["cache", "--check", "--path", str(path)]) == 0
    capsys.readouterr()
    with CallCache(path) as c:
        kept = c.stats()["entries"]
        # every salvaged entry is a real one, with its value
        for i in range(300):
            v = c.get(_key(i))
            assert v is None or v == f"answer {i} " + "y" * 500
    if damage in ("truncated", "malformed"):
        assert kept > 0, "nothing salvaged from a partly readable file"
    if damage == "not_sqlite":
        assert kept == 0


def test_check_on_a_valid_cache_and_repair_has_nothing_to_do(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    _good_cache(path, 5)
    assert edufair(["cache", "--check", "--path", str(path)]) == 0
    assert "valid: 5 entries" in capsys.readouterr().out
    assert edufair(["cache", "--repair", "--path", str(path)]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir() if "damaged" in p.name] == []
