"""The golden outputs of ``edufair report`` on the stored runs in ``runs.tar.xz`` (written by
``make_runs.py``): every file of the output folder, byte for byte, after the normalisations below,
compared with ``expected/``. ``COMMANDS`` is what expected/ holds today (the report of the
``evidence`` runs: real transcripts, judge labels, detectors, call counts, figures, the HTML view);
``MORE_COMMANDS`` (the paper's conditions with a placebo and two tutors, the extension conditions
with replicates, the leaderboard and the CI gate) run on the same stored runs: add them to
``COMMANDS`` and regenerate on a machine with the CPU for it (``produce(tmp, COMMANDS + MORE_COMMANDS)``).

    PYTHONPATH=. python -m tests.report.golden.golden          # rewrite expected/ (intended changes only)

Normalised (what legitimately differs between two identical runs of the command):
* the folder the runs were unpacked to and the output folder -> ``<RUNS>`` / ``<OUT>``;
* ``report_manifest.json`` / the leaderboard's and compare's JSON: ``created``, ``seconds``, the
  installed ``versions`` (python, numpy, ...), the viewer's ``seconds`` and ``bytes`` (index.html holds
  the command with its paths) are blanked; the
  samples files' sha256 stay (the stored runs do not change);
* ``index.html``: the page's JSON is pinned as JSON (with the same blanked keys) in
  ``<name>.page.json``, the rest of the page (template, script, stylesheet) byte for byte;
* PNG figures: the set of file names and their bytes (matplotlib writes no date into a PNG; its
  ``Software`` tag names the matplotlib version, so a matplotlib upgrade rewrites expected/).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ARCHIVE = HERE / "runs.tar.xz"
EXPECTED = HERE / "expected"
N_BOOT = "50"
# (name, command arguments after the run folder root is known); {R} = the unpacked runs, {O} = the output root
COMMANDS: tuple[tuple[str, list[str]], ...] = (
    # at the default minimum of pairs these 12 questions are "not testable": the banner, the descriptive
    # rates and every "insufficient" path of the tables, figures and page (the statistics themselves are
    # pinned by MORE_COMMANDS once generated)
    ("report_evidence", ["report", "{R}/evidence", "--out", "{O}/report_evidence", "--n-boot", N_BOOT]),
)
# Stored in runs.tar.xz too, and pinned by the same code once expected/ holds them (on this project's
# shared 2-core machine one report of these took over 6 CPU minutes, `leaderboard_paper` at B = 20 about
# 10 wall minutes at load ≈ 9: too long for CI, which is near its limit). Each of them reads its runs (the
# `extensions` run's replicate dialogues were rewritten as their own dialogues; before, that run could
# not be read: "the same dialogue twice"):
MORE_COMMANDS: tuple[tuple[str, list[str]], ...] = (
    ("report_paper", ["report", "{R}/paper", "--out", "{O}/report_paper", "--n-boot", N_BOOT, "--min-pairs", "10"]),
    ("report_extensions", ["report", "{R}/extensions", "--out", "{O}/report_extensions", "--n-boot", N_BOOT,
                           "--min-pairs", "8"]),
    ("leaderboard_paper", ["leaderboard", "{R}/paper", "--out", "{O}/leaderboard_paper", "--n-boot", N_BOOT,
                           "--min-pairs", "10"]),
    ("compare_paper", ["compare", "--baseline", "{R}/paper/org__fair", "--candidate", "{R}/paper/org__biased",
                       "--out", "{O}/compare_paper", "--n-boot", N_BOOT, "--min-pairs", "10"]),
)
VOLATILE = {"created", "seconds", "versions", "bytes"}  # bytes: index.html holds the command's paths
PAGE_DATA = re.compile(r"EF\.data = (.*?);\n</script>", re.S)  # report/html: render_index


def unpack(dest: Path) -> Path:
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(dest, filter="data")
    return dest / "runs"


def _blank(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: ("<volatile>" if k in VOLATILE else _blank(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_blank(v) for v in obj]
    return obj


def _text(data: bytes, roots: dict[str, str]) -> str:
    text = data.decode("utf-8")
    for path, mark in roots.items():
        text = text.replace(path, mark)
    return text


def normalise(out_root: Path, roots: dict[str, str]) -> dict[str, bytes]:
    """Every output file under ``out_root`` as the golden compares it (relative path -> bytes)."""
    files: dict[str, bytes] = {}
    for p in sorted(out_root.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(out_root).as_posix()
        data = p.read_bytes()
        if p.suffix == ".png":
            files[rel] = data
        elif p.suffix == ".json":
            files[rel] = (json.dumps(_blank(json.loads(_text(data, roots))), indent=1, sort_keys=True,
                                     ensure_ascii=False) + "\n").encode()
        elif p.suffix == ".html":
            text = _text(data, roots)
            m = PAGE_DATA.search(text)
            if m:
                page = json.loads(m.group(1).replace("<\\/", "</"))
                files[rel + ".page.json"] = (json.dumps(_blank(page), indent=1, sort_keys=True, ensure_ascii=False)
                                             + "\n").encode()
                text = text[:m.start(1)] + "<page data: " + rel + ".page.json>" + text[m.end(1):]
            files[rel] = text.encode()
        else:
            try:
                files[rel] = _text(data, roots).encode()
            except UnicodeDecodeError:
                files[rel] = data
    return files


def produce(work: Path, commands=COMMANDS) -> dict[str, bytes]:
    """Unpack the stored runs under ``work``, run every command in-process and return the normalised
    outputs (``<command name>/<file>`` -> bytes; ``<command name>.out`` holds its exit status and
    printed lines)."""
    from edufair_metrics.cli import main as cli

    runs = unpack(work / "in")
    out_root = work / "out"
    out_root.mkdir()
    roots = {str(out_root): "<OUT>", str(runs): "<RUNS>"}
    printed: dict[str, bytes] = {}
    for name, args in commands:
        argv = [a.replace("{R}", str(runs)).replace("{O}", str(out_root)) for a in args]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = cli(argv)
        printed[f"{name}.out"] = _text(f"rc={rc}\n{buf.getvalue()}".encode(), roots).encode()
    return {**normalise(out_root, roots), **printed}


def digest(files: dict[str, bytes]) -> str:
    return hashlib.sha256(b"".join(k.encode() + b"\0" + v for k, v in sorted(files.items()))).hexdigest()


def expected() -> dict[str, bytes]:
    return {p.relative_to(EXPECTED).as_posix(): p.read_bytes() for p in sorted(EXPECTED.rglob("*")) if p.is_file()}


def write_expected(files: dict[str, bytes]) -> None:
    if EXPECTED.exists():
        shutil.rmtree(EXPECTED)
    for rel, data in files.items():
        path = EXPECTED / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = produce(Path(tmp))
    write_expected(got)
    print(f"wrote {len(got)} files to {EXPECTED} ({sum(map(len, got.values())) / 1e6:.1f} MB)")
