"""A full output disk through the real lm_eval CLI: the run exits non-zero with one line
naming the file and the free space, leaves no file that looks complete, and the same command after
space is freed writes, into the same folder, a run that ``edufair report`` reads (nothing deleted
by hand).

The disk: a tmpfs of 2 MiB where the test can mount one (root, as on CI), filled by one file to
``LEAVE`` bytes free and freed by removing that file; where mounting fails, the ENOSPC write shim
(``tests/helpers/enospc_shim``: every write of the lm_eval process under the output folder past
``LEAVE`` bytes raises ``OSError(ENOSPC)``), removed for the rerun. Never skipped."""

from __future__ import annotations

import subprocess

import pytest

from edufair_metrics.runlog.layout import RESULTS_RE, SAMPLES_RE
from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import PY, EduFairFake, cli_env, lm_eval_argv, run_cli
from tests.helpers.full_disk import fill, shim_env, small_disk

pytestmark = pytest.mark.slow

# room for the results file (~15 KiB) but not for the samples (9 dialogues, ~150 KiB)
LEAVE = 40 * 1024


def _looks_complete(out) -> list[str]:
    return sorted(p.name for p in out.rglob("*") if RESULTS_RE.match(p.name) or SAMPLES_RE.match(p.name))


def test_a_full_output_disk_fails_in_one_line_and_the_rerun_after_freeing_space_reports(tmp_path):
    bank = write_bank(tmp_path / "bank", n=1)
    disk = tmp_path / "disk"
    with small_disk(disk, "2m") as mounted, EduFairFake() as fake:
        out = disk / "out"
        argv = lm_eval_argv(fake.url, bank, out)
        env = cli_env(tmp_path / "cache")
        if mounted:
            filler = fill(disk, LEAVE)
            full_env = env
        else:
            filler = None
            full_env = shim_env(env, disk, LEAVE)
        r = run_cli(argv, full_env, tmp_path, timeout=240)
        assert r.returncode != 0, r.stderr[-3000:]
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("edufair: error: could not write "), r.stderr[-3000:]
        assert " free on " in last and "run the same command again" in last and "Traceback" not in r.stderr[-2000:]
        assert str(out) in last
        assert _looks_complete(out) == []  # nothing that looks complete

        # space freed: the same command, the same folder, nothing removed by hand
        if filler is not None:
            filler.unlink()
        r = run_cli(argv, env, tmp_path, timeout=240)
        assert r.returncode == 0, r.stderr[-3000:]
        names = _looks_complete(out)
        assert len([n for n in names if n.startswith("results_")]) == 1 and len(names) == 2, names
        rep = subprocess.run([PY, "-m", "edufair_metrics.cli", "report", str(out), "--out", str(tmp_path / "rep"),
                              "--n-boot", "20", "--no-figures", "--no-html"], capture_output=True, text=True,
                             timeout=240, env=cli_env(tmp_path / "cache-report"))
        assert rep.returncode == 0, rep.stderr[-3000:]
        assert (tmp_path / "rep" / "summary.md").exists()
