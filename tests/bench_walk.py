"""The walk samples -> summary.md (ARCHITECTURE.md, "The report side"): how many rooms (package
modules) a reader enters following the code from one run folder to summary.md, and how many times the
walk returns to a room it came from.

    PYTHONPATH=. python tests/bench_walk.py [--rooms] [--v3]   # on the golden test's stored evidence run

Measured, not read: ``read_report_inputs`` + ``write_report`` (figures and the HTML view off: what
summary.md needs) run once under ``sys.setprofile`` on ``tests/report/golden/runs.tar.xz``'s
``evidence`` run. Every first call of a package function is a step of the walk (a function called
again is not read again); its caller is the nearest package function on the stack. Rooms: the
distinct modules of those functions. Returns: the steps that go to another module than the caller's
(each one ends by coming back to the caller's room). Printed for the whole walk and for its
``write_report`` leg (the steps below ``write_report``). The stored run's records are schema v2 (no
per-turn scorer output), so reading them runs the scorers (detectors, matching); ``--v3`` first
rewrites them as today's records (completed, schema v3: what a run of this version stores), outside
the walk, and walks that.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

PACKAGE = "edufair_metrics"


def walk(fn) -> list[tuple[tuple[str, str] | None, tuple[str, str]]]:
    """Run ``fn()`` under the profiler; the walk's steps (caller node, callee node), node = (module,
    qualified name), in first-call order."""
    seen: set[tuple[str, str]] = set()
    steps: list[tuple[tuple[str, str] | None, tuple[str, str]]] = []
    stack: list[tuple[object, tuple[str, str]]] = []

    def prof(frame, event, _arg):
        if event == "call":
            mod = frame.f_globals.get("__name__", "")
            if mod == PACKAGE or mod.startswith(PACKAGE + "."):
                node = (mod, frame.f_code.co_qualname)
                if node not in seen:
                    seen.add(node)
                    steps.append((stack[-1][1] if stack else None, node))
                stack.append((frame, node))
        elif event == "return" and stack and stack[-1][0] is frame:
            stack.pop()

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return steps


def count(steps, below: str | None = None) -> tuple[int, int, int]:
    """(functions, rooms, returns) of ``steps``; ``below``: only that function and the steps under it."""
    if below is not None:
        keep = {n for _, n in steps if n[1] == below}
        leg = []
        for parent, node in steps:
            if parent in keep:
                keep.add(node)
                leg.append((parent, node))
        steps = [(None, n) for n in keep if n[1] == below] + leg
    rooms = {n[0] for _, n in steps}
    returns = sum(1 for p, n in steps if p is not None and p[0] != n[0])
    return len(steps), len(rooms), returns


def as_v3(run: Path, dest: Path) -> Path:
    """``run``'s samples files rewritten with completed schema-v3 records (and its results files
    copied beside them) under ``dest``."""
    import shutil

    from edufair_metrics.catalogue import names
    from edufair_metrics.runlog.rewrite import read_stored_run, write_rebuilt
    from edufair_metrics.runlog.scorers import complete

    stored = read_stored_run([str(run)], dest, "rewrite")
    metrics = [m for kind in ("pedagogical", "conversation", "detector", "student", "outcome") for m in names(kind)]
    write_rebuilt(stored, [complete(r, only_stale=False)[0] for _, r in stored.records], metrics)
    for results in run.rglob("results_*.json"):
        shutil.copy(results, dest / results.parent.name / results.name)
    return dest


def main() -> None:
    from edufair_metrics.analysis.params import StatParams
    from edufair_metrics.report.write import read_report_inputs, write_report
    from tests.report.golden.golden import unpack

    with tempfile.TemporaryDirectory() as tmp:
        runs = unpack(Path(tmp))
        run = as_v3(runs / "evidence", Path(tmp) / "evidence_v3") if "--v3" in sys.argv else runs / "evidence"

        def report():
            inputs = read_report_inputs([run], evidence=False)
            write_report(inputs, Path(tmp) / "out", StatParams(n_boot=50), figures=False, html=False)

        steps = walk(report)
    for name, below in (("samples -> summary.md", None), ("write_report leg", "write_report")):
        fns, rooms, returns = count(steps, below)
        print(f"{name}: {rooms} rooms, {returns} returns ({fns} functions)")
    if "--rooms" in sys.argv:  # the rooms themselves, one a line
        print("\n".join(sorted({n[0] for _, n in steps})))


if __name__ == "__main__":
    main()
