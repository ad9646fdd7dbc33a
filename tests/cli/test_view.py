"""``edufair view``: writes the report of runs when it is missing, serves a report folder on a free
loopback port (the server answers index.html and the viewer's files), stops on Ctrl-C with exit
130 and no traceback; ``--no-serve`` only prints the path of index.html."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request

from edufair_metrics.cli import main as cli

from tests.helpers.evidence_runs import write_evidence_run
from tests.helpers.edufair_cli import sigint_as_a_terminal_sends_it


def test_no_serve_writes_the_report_of_runs_once_and_prints_its_page(tmp_path, capsys):
    write_evidence_run(tmp_path / "runs", n_questions=16)
    assert cli(["view", str(tmp_path / "runs"), "--no-serve", "--n-boot", "20"]) == 0
    index = tmp_path / "runs" / "edufair-report" / "index.html"
    assert capsys.readouterr().out.strip() == str(index.resolve()) and index.is_file()
    stamp = index.stat().st_mtime_ns
    assert cli(["view", str(tmp_path / "runs"), "--no-serve"]) == 0  # exists: not written again
    assert index.stat().st_mtime_ns == stamp and "using the existing report" in capsys.readouterr().err
    assert cli(["view", str(index.parent), "--no-serve"]) == 0  # the report folder itself
    assert capsys.readouterr().out.strip() == str(index.resolve())
    assert cli(["view", str(tmp_path / "runs"), "--no-serve", "--rebuild", "--n-boot", "20", "--out", str(tmp_path / "r2")]) == 0
    assert (tmp_path / "r2" / "index.html").is_file()


def test_a_report_without_a_page_or_a_missing_folder_is_one_line(tmp_path, capsys):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "report_manifest.json").write_text("{}")
    assert cli(["view", str(tmp_path / "old"), "--no-serve"]) == 2
    assert "has no index.html" in capsys.readouterr().err
    assert cli(["view", str(tmp_path / "nope"), "--no-serve"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_serves_the_report_on_loopback_and_stops_on_ctrl_c(tmp_path):
    write_evidence_run(tmp_path / "runs", n_questions=16)
    assert cli(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--n-boot", "20", "--no-figures"]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "edufair_metrics.cli", "view", str(tmp_path / "rep")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_a_terminal_sends_it)
    try:
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:(\d+)/index\.html)", line)
        assert m, line + proc.stderr.read()
        with urllib.request.urlopen(m.group(1), timeout=10) as resp:
            assert resp.status == 200 and "EduFair report" in resp.read().decode()
        with urllib.request.urlopen(m.group(1).replace("index.html", "viewer/questions.js"), timeout=10) as resp:
            assert resp.read().startswith(b"EF.questions(")
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err and "stopped" in err
