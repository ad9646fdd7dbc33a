"""The report's house rules, on the same import scan as tests/test_architecture.py:

* no import circle inside ``report/`` (``report/leaderboard.py`` ↔ ``report/write.py`` through
  ``versions()`` was one: ``versions()`` now lives in ``provenance.py``), nor anywhere between the
  package's report, analysis and root modules;
* ``report/`` only formats: it never calls the computations ``analysis.audit`` runs once per report
  (the grid, the placebo, the replicates, the names, the ranks, testability, the tallies); it takes
  them from the :class:`~edufair_metrics.analysis.audit.Audit`.
"""

from __future__ import annotations

import ast

import pytest

from tests.test_architecture import ALL_IMPORTS, PKG, PKG_DIR, PY_FILES, REPO, _module_name, _report, layer_of_file

# what analysis.audit computes once: report/ may not call these (it reads them off the Audit)
AUDITED = {
    "edufair_metrics.analysis.params": {"analyse", "analyse_frame"},
    "edufair_metrics.analysis.grid": {"dimension_summary"},
    "edufair_metrics.analysis.placebo": {"placebo_floor", "exchangeability_check", "placebo_cost"},
    "edufair_metrics.analysis.replicates": {"variance_components"},
    "edufair_metrics.analysis.names": {"name_effects"},
    "edufair_metrics.analysis.ranks": {"rank_intervals"},
    "edufair_metrics.analysis.testability": {"assess_testability"},
    "edufair_metrics.analysis.pairloss": {"level_loss_table"},
    "edufair_metrics.analysis.judge_validity": {"next_turn_table"},
    "edufair_metrics.analysis.tallies": {"failure_table", "cost_table", "outcome_levels", "level_rates", "missing_label_table"},
    "edufair_metrics.analysis.compare": {"compare_frames"},
    "edufair_metrics.analysis.frames": {"dialogue_frame"},
}
# Known exceptions, each with its reason: the judge-contingent grids of a second
# judging are a separate analysis of other labels.
ALLOWED = {
    ("edufair_metrics/report/judge_validity.py", "contrast_grid"): "the grids of the judge-contingent rows",
}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p) for p in PY_FILES}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for path, imp in ALL_IMPORTS:
        src = _module_name(path)
        target = imp.target
        while target and target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in modules and target != src and target != PKG:
            graph[src].add(target)
    return graph


def _cycles(graph: dict[str, set[str]], keep) -> list[list[str]]:
    """Strongly connected components of more than one module among the modules ``keep`` accepts."""
    nodes = [n for n in graph if keep(n)]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if not keep(w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}, lambda n: True) == [["a", "b"]]


def test_no_import_circle_in_report_analysis_or_the_root():
    def keep(name: str) -> bool:
        parts = name.split(".")
        return len(parts) >= 2 and (len(parts) == 2 or parts[1] in ("report", "analysis"))

    cycles = _cycles(_graph(), keep)
    assert not cycles, f"import circles: {cycles}"


def test_versions_lives_in_provenance():
    from edufair_metrics.provenance import versions
    from edufair_metrics.report import write

    assert write.versions is versions  # the old name still works
    tree = ast.parse((PKG_DIR / "report" / "write.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "versions"]


def _calls_of(path) -> list[tuple[int, str]]:
    """(line, name) of every call of a plain or attribute name in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name:
                out.append((node.lineno, name))
    return out


def test_report_calls_no_computation_the_audit_holds():
    audited = set().union(*AUDITED.values())
    bad = []
    for path in PY_FILES:
        if layer_of_file(path) != "report":
            continue
        rel = str(path.relative_to(REPO))
        imported = {imp.text for p, imp in ALL_IMPORTS if p == path}
        for line, name in _calls_of(path):
            if name in audited and (rel, name) not in ALLOWED and any(name in t for t in imported):
                bad.append(f"{rel}:{line}: calls {name}")
        for p, imp in ALL_IMPORTS:
            if p == path and imp.target == "edufair_metrics.analysis.grid" and "contrast_grid" in imp.text \
                    and (rel, "contrast_grid") not in ALLOWED:
                bad.append(f"{imp.where}: imports contrast_grid")
    if bad:
        pytest.fail("report/ recomputes what analysis.audit holds:\n  " + "\n  ".join(bad), pytrace=False)


def test_write_report_uses_the_audit_and_is_short():
    tree = ast.parse((PKG_DIR / "report" / "write.py").read_text(encoding="utf-8"))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "write_report")
    assert fn.end_lineno - fn.lineno + 1 <= 80
    assert "audit" in {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def test_the_checks_see_a_violation():
    """The call scan finds a call of an audited computation (so an empty result means something)."""
    src = REPO / "edufair_metrics" / "analysis" / "audit.py"
    assert {"analyse", "placebo_floor", "rank_intervals"} <= {name for _, name in _calls_of(src)}
    assert _report([], "x").startswith("x: 0")
