"""Text hygiene of the tracked tree: no comment or doc points at the project's issue tracker
(the word "issue" with a number, or a bare "#" number in brackets: meaningless to a reader of the code), and every Markdown file a text names exists
in the tree (or is a file EduFair itself writes, such as a report's summary.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".cfg", ".toml", ".txt")
# the history of changes may name what it resolved; everything else speaks for itself
NOT_CHECKED = {"CHANGELOG.md", "test_hygiene.py"}  # (this file quotes what it forbids)
ISSUE_REF = re.compile(r"\bissues?\s+#?\d+|\(#\d+\)|\bissue\s+\d+(?:\.\d+)?", re.IGNORECASE)
MD_NAME = re.compile(r"(?<![\w/.-])((?:\.\.?/)?[\w./-]*[\w-]\.md)\b")
# Markdown files EduFair writes (reports, compare, leaderboard, agreement): named, never in the tree
WRITTEN_MD = re.compile(r"^(summary|levels|failures|tables|compare|leaderboard|judge_contingent|missing_labels|detector_agreement|glossary|"
                        r"table\w*|signed_\w+)\.md$")


def tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [REPO / f for f in out.splitlines() if f.endswith(TEXT_SUFFIXES) and Path(f).name not in NOT_CHECKED
            and (REPO / f).is_file()]


def test_no_issue_tracker_references():
    bad = []
    for f in tracked_text_files():
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if ISSUE_REF.search(line):
                bad.append(f"{f.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not bad, "references to the issue tracker (say what the code does instead):\n  " + "\n  ".join(bad)


def test_named_markdown_files_exist():
    names = {p.name for p in REPO.rglob("*.md") if ".venv" not in p.parts}
    bad = []
    for f in tracked_text_files():
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in MD_NAME.finditer(line):
                ref = m.group(1)
                base = Path(ref).name
                if WRITTEN_MD.match(base) or "://" in line[max(0, m.start() - 80):m.start()]:
                    continue
                here = (f.parent / ref).resolve()
                in_repo = REPO in here.parents or here == REPO
                if ("/" in ref and in_repo and here.is_file()) or ("/" not in ref and base in names) \
                        or (REPO / ref).is_file():
                    continue
                bad.append(f"{f.relative_to(REPO)}:{n}: {ref}")
    assert not bad, "Markdown files named but not in the tree:\n  " + "\n  ".join(bad)
