"""Import-graph rules of ``edufair_metrics`` (checked with ``ast``, nothing is imported).

Layers, inner to outer::

    shared root modules (errors, io, records, failures, cache, schema, secrets, scores,
    provenance, preflight, the package __init__)
      < protocol < bank < dialogue < detectors < judge < runlog < run < analysis < report   (the core stages)
    settings the one settings chain; composes the stages' settings models, so it may use every
             core stage, never lmeval, local or cli; no core stage imports it (stages receive
             resolved models)
    lmeval   the ONLY place that touches lm-eval internals; may use every core stage and settings
    local    may use the core stages, settings and lmeval (tasks_path), never cli
    cli      may use everything

and ``lm_eval_tasks/`` (YAMLs + a thin ``task.py``) imports ``edufair_metrics``, never the reverse.

Every import is checked: module level, inside functions and under ``if TYPE_CHECKING:``,
absolute and relative, and ``importlib.import_module("...")`` / ``__import__("...")`` with a
literal name. Each failure lists the offending imports as ``file:line: import ... -- rule``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PKG = "edufair_metrics"
PKG_DIR = REPO / PKG
TASKS_PKG_DIR = REPO / "lm_eval_tasks"

# Core stage subpackages, inner to outer: a stage may import only stages at or below its rank.
STAGES = ("protocol", "bank", "dialogue", "detectors", "judge", "runlog", "run", "analysis", "report")
ROOT = "<root>"  # the shared top-level modules of edufair_metrics (rank 0, below every stage)
RANK = {ROOT: 0, **{stage: i + 1 for i, stage in enumerate(STAGES)}}
CORE = frozenset(RANK)
OUTER = ("settings", "lmeval", "local", "cli")
KNOWN_SUBPACKAGES = frozenset(STAGES + OUTER)

# Files outside edufair_metrics/lmeval/ allowed to import lm_eval, each with its reason.
# Deliberately empty. Reading lm-eval's *version* needs no entry here: do it with
# ``importlib.metadata.version("lm_eval")``, which is not an import of lm_eval. An
# ``import lm_eval`` (as edufair_metrics/report/write.py:versions() did when this test was
# written) is reported like any other.
ALLOWED_LM_EVAL_IMPORTS: dict[str, str] = {
    "edufair_metrics/runlog/layout.py": "reads the model_args lm-eval writes into results files with lm-eval's own "
                                        "parser (lm_eval.utils.simple_parse_args_string), lazily",
}


@dataclass(frozen=True)
class Imp:
    file: str  # repository-relative path
    line: int
    target: str  # dotted module imported (for `from X import name`: X.name when that is a module)
    text: str  # the import as written

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_edufair_module(dotted: str) -> bool:
    """Whether ``edufair_metrics.a.b`` names a module or package that exists in the tree."""
    rel = Path(*dotted.split("."))
    return (REPO / rel).with_suffix(".py").is_file() or (REPO / rel / "__init__.py").is_file()


def _resolve_relative(path: Path, level: int, module: str | None) -> str:
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    if level - 1 > len(package) - 1:
        raise AssertionError(f"{path.relative_to(REPO)}: relative import beyond the top-level package")
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _literal_import_call(node: ast.Call) -> str | None:
    """``importlib.import_module("x")`` / ``import_module("x")`` / ``__import__("x")``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and not arg.value.startswith("."):
        return arg.value
    return None


def imports_of(path: Path) -> list[Imp]:
    rel = str(path.relative_to(REPO))
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    out: list[Imp] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Imp(rel, node.lineno, alias.name, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(path, node.level, node.module) if node.level else (node.module or "")
            shown = f"from {'.' * node.level}{node.module or ''} import {', '.join(a.name for a in node.names)}"
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if base.split(".")[0] == PKG and _is_edufair_module(sub) else base
                out.append(Imp(rel, node.lineno, target, shown))
        elif isinstance(node, ast.Call):
            name = _literal_import_call(node)
            if name:
                out.append(Imp(rel, node.lineno, name, ast.unparse(node)))
    return out


def layer_of_file(path: Path) -> str:
    parts = path.relative_to(PKG_DIR).parts
    return ROOT if len(parts) == 1 else parts[0]


def layer_of_target(dotted: str) -> str | None:
    """The layer of an edufair_metrics module (None for anything else)."""
    parts = dotted.split(".")
    if parts[0] != PKG:
        return None
    if len(parts) == 1:
        return ROOT  # the package itself: __version__, PROTOCOL_VERSION
    if (PKG_DIR / parts[1]).is_dir():
        return parts[1]
    return ROOT


def _is_lm_eval(dotted: str) -> bool:
    return dotted == "lm_eval" or dotted.startswith("lm_eval.")


def _is_lm_eval_tasks(dotted: str) -> bool:
    return dotted == "lm_eval_tasks" or dotted.startswith("lm_eval_tasks.")


PY_FILES = sorted(PKG_DIR.rglob("*.py"))
ALL_IMPORTS: list[tuple[Path, Imp]] = [(f, imp) for f in PY_FILES for imp in imports_of(f)]


def _report(bad: list[tuple[Imp, str]], rule: str) -> str:
    lines = "\n".join(f"  {imp.where}  -- {why}" for imp, why in bad)
    return f"{rule}: {len(bad)} offending import(s)\n{lines}"


# ---- sanity of the checker itself --------------------------------------------------------------


def test_the_import_scan_sees_the_package():
    assert len(PY_FILES) > 20, f"no sources found under {PKG_DIR}"
    # A function-level import and a module-level one that must be seen.
    found = {(imp.file, imp.target) for _, imp in ALL_IMPORTS}
    assert ("edufair_metrics/lmeval/task.py", "lm_eval.api.task") in found
    assert ("edufair_metrics/lmeval/models.py", "torch") in found  # inside HarnessModel.generate
    assert ("edufair_metrics/runlog/layout.py", "lm_eval.utils") in found  # inside tutor_name


def test_every_subpackage_is_classified():
    subpackages = {p.parent.name for p in PKG_DIR.glob("*/__init__.py")}
    unknown = sorted(subpackages - KNOWN_SUBPACKAGES)
    assert not unknown, (
        f"edufair_metrics subpackage(s) {unknown} are not placed in the architecture; add them to "
        f"STAGES or OUTER in {Path(__file__).name}"
    )


def test_relative_import_resolution():
    # The package has no relative imports today; make sure they would be classified correctly.
    probe = PKG_DIR / "judge" / "run.py"
    assert _resolve_relative(probe, 1, "parse") == "edufair_metrics.judge.parse"
    assert _resolve_relative(probe, 2, "report.write") == "edufair_metrics.report.write"
    assert _resolve_relative(PKG_DIR / "judge" / "__init__.py", 1, None) == "edufair_metrics.judge"
    assert layer_of_target(_resolve_relative(probe, 2, "report")) == "report"


# ---- the rules ---------------------------------------------------------------------------------


def test_edufair_metrics_never_imports_lm_eval_tasks():
    bad = [(imp, "lm_eval_tasks imports edufair_metrics, never the reverse")
           for _, imp in ALL_IMPORTS if _is_lm_eval_tasks(imp.target)]
    if bad:
        pytest.fail(_report(bad, "edufair_metrics must not import lm_eval_tasks"), pytrace=False)


def test_only_lmeval_imports_lm_eval():
    bad = []
    for path, imp in ALL_IMPORTS:
        if not _is_lm_eval(imp.target) or layer_of_file(path) == "lmeval" or imp.file in ALLOWED_LM_EVAL_IMPORTS:
            continue
        bad.append((imp, "lm-eval internals belong in edufair_metrics/lmeval/ "
                         "(read the lm-eval version with importlib.metadata.version('lm_eval'))"))
    if bad:
        pytest.fail(_report(bad, "only edufair_metrics/lmeval/ may import lm_eval"), pytrace=False)


def test_allowed_lm_eval_imports_are_still_needed():
    stale = [f for f in ALLOWED_LM_EVAL_IMPORTS
             if not any(imp.file == f and _is_lm_eval(imp.target) for _, imp in ALL_IMPORTS)]
    assert not stale, f"ALLOWED_LM_EVAL_IMPORTS lists files that no longer import lm_eval: {stale}"


def test_core_never_imports_lmeval_cli_or_local():
    bad = []
    for path, imp in ALL_IMPORTS:
        src, dst = layer_of_file(path), layer_of_target(imp.target)
        if src in CORE and dst in OUTER:
            bad.append((imp, f"core layer '{src}' imports edufair_metrics.{dst}"))
    if bad:
        pytest.fail(_report(bad, "core stages and shared root modules must not import settings, lmeval, cli or local"), pytrace=False)


@pytest.mark.parametrize("src, forbidden", [
    ("settings", ("lmeval", "local", "cli")), ("local", ("cli",)), ("lmeval", ("cli", "local")),
])
def test_outer_layers(src, forbidden):
    bad = []
    for path, imp in ALL_IMPORTS:
        dst = layer_of_target(imp.target)
        if layer_of_file(path) == src and dst in forbidden:
            bad.append((imp, f"edufair_metrics.{src} imports edufair_metrics.{dst}"))
    if bad:
        pytest.fail(_report(bad, f"edufair_metrics.{src} must not import {', '.join(forbidden)}"), pytrace=False)


def test_stage_order():
    """shared root < protocol < ... < runlog < run < analysis < report: lower never imports higher."""
    bad = []
    for path, imp in ALL_IMPORTS:
        src, dst = layer_of_file(path), layer_of_target(imp.target)
        if src in RANK and dst in RANK and RANK[dst] > RANK[src]:
            name = "shared root module" if src == ROOT else f"stage '{src}'"
            bad.append((imp, f"{name} (rank {RANK[src]}) imports stage '{dst}' (rank {RANK[dst]})"))
    if bad:
        pytest.fail(_report(bad, "stage order violated (lower stages must not import higher ones)"), pytrace=False)


def test_scores_is_a_shared_root_module():
    """scores.py is used by judge/ and report; it must itself stay below every stage."""
    path = PKG_DIR / "scores.py"
    bad = [(imp, f"imports layer '{layer_of_target(imp.target)}'") for imp in imports_of(path)
           if layer_of_target(imp.target) not in (None, ROOT)]
    if bad:
        pytest.fail(_report(bad, "edufair_metrics/scores.py may import only shared root modules"), pytrace=False)


# ---- lm_eval_tasks: the lm-eval face -----------------------------------------------------------

TASK_MODULE = "lm_eval_tasks.task"
_FUNCTION_TAG = re.compile(r"!function\s+([^\s,}\]#]+)")


def _task_yaml_files() -> list[Path]:
    d = TASKS_PKG_DIR / "edufair"
    return sorted(p for p in d.iterdir() if p.is_file() and (p.suffix in (".yaml", ".yml") or p.name.endswith("_yaml")))


def _function_refs(path: Path) -> list[tuple[int, str]]:
    refs = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        refs.extend((lineno, m.group(1)) for m in _FUNCTION_TAG.finditer(code))
    return refs


def test_lm_eval_tasks_task_only_reexports():
    path = TASKS_PKG_DIR / "task.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    exported: list[str] | None = None
    bad = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # docstring
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (PKG, "__future__"):
            imported.update(a.asname or a.name for a in node.names if node.module != "__future__")
            continue
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "__all__"):
            exported = list(ast.literal_eval(node.value))
            continue
        bad.append(f"lm_eval_tasks/task.py:{node.lineno}: {ast.unparse(node).splitlines()[0]}")
    assert not bad, "lm_eval_tasks/task.py must only re-export names from edufair_metrics:\n  " + "\n  ".join(bad)
    assert exported is not None, "lm_eval_tasks/task.py has no __all__"
    assert set(exported) == imported, (
        f"lm_eval_tasks/task.py: __all__ and the imported names differ: only imported {sorted(imported - set(exported))}, "
        f"only in __all__ {sorted(set(exported) - imported)}"
    )


def test_template_function_tags_exist_in_task_module():
    import importlib

    template = TASKS_PKG_DIR / "edufair" / "_edufair_template_yaml"
    refs = _function_refs(template)
    assert refs, f"{template.relative_to(REPO)} names no !function"
    module = importlib.import_module(TASK_MODULE)
    missing = [f"{template.relative_to(REPO)}:{n}: !function {ref}" for n, ref in refs
               if ref.startswith(TASK_MODULE + ".") and not hasattr(module, ref[len(TASK_MODULE) + 1:])]
    assert not missing, f"names missing from {TASK_MODULE}:\n  " + "\n  ".join(missing)
    not_exported = [ref for _, ref in refs if ref.startswith(TASK_MODULE + ".")
                    and ref[len(TASK_MODULE) + 1:] not in getattr(module, "__all__", ())]
    assert not not_exported, f"{TASK_MODULE}.__all__ lacks names the YAML uses: {not_exported}"


def test_every_function_tag_points_into_task_module():
    files = _task_yaml_files()
    assert files, "no task YAMLs found"
    bad = [f"{p.relative_to(REPO)}:{n}: !function {ref}" for p in files for n, ref in _function_refs(p)
           if not (ref.startswith(TASK_MODULE + ".") and ref.count(".") == TASK_MODULE.count(".") + 1)]
    assert not bad, f"every !function must name a top-level attribute of {TASK_MODULE}:\n  " + "\n  ".join(bad)


# ---- one home for lm-eval's output layout and for the detectors' use ---------------------------

_LAYOUT_CALLS = {"glob", "rglob", "compile", "match", "fullmatch", "search", "fnmatch", "iglob"}


def _layout_patterns(path: Path) -> list[tuple[int, str]]:
    """(line, pattern) of every glob / regex call whose literal pattern names lm-eval's output
    files (``samples_*`` / ``results_*``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        arg = node.args[0]
        if name in _LAYOUT_CALLS and isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                and re.search(r"(samples|results)_", arg.value):
            out.append((node.lineno, arg.value))
    return out


def test_only_runlog_knows_lm_evals_output_files():
    """Finding or matching ``samples_*.jsonl`` / ``results_*.json`` is edufair_metrics/runlog/'s job
    (layout.py); everything else asks it (load_runs, record_files, newest_outputs, find_samples)."""
    bad = [f"{f.relative_to(REPO)}:{line}: {pattern!r}" for f in PY_FILES if layer_of_file(f) != "runlog"
           for line, pattern in _layout_patterns(f)]
    assert not bad, "lm-eval's output layout outside edufair_metrics/runlog/:\n  " + "\n  ".join(bad)
    assert _layout_patterns(PKG_DIR / "runlog" / "layout.py"), "the check sees no pattern in runlog/layout.py itself"


def test_report_never_calls_the_detectors():
    """Detector metrics are part of every record (runlog builds and completes them); reports read
    them, and the judge-validity analyses that need the detectors live in analysis/."""
    bad = [(imp, "report/ imports the detectors") for path, imp in ALL_IMPORTS
           if layer_of_file(path) == "report" and layer_of_target(imp.target) == "detectors"]
    if bad:
        pytest.fail(_report(bad, "edufair_metrics/report must not import edufair_metrics.detectors"), pytrace=False)


# ---- runlog/ is pure: records on disk, no model calls ------------------------------------------

# What runlog/ holds: lm-eval's layout, the one reader of record lines, the one place a
# record is made and its scorers, the rewrite of a run folder (the records and results writers),
# loading runs, the labelling sample. Judging, re-judging and the post-test's student calls are run/'s.
RUNLOG_MODULES = {"__init__", "layout", "read", "build", "scorers", "rewrite", "runs", "labels"}
# Modules that call, or build, a model: the judge (its client and runner), the dialogue runner (its
# generation, loop and post-test), and HTTP clients.
MODEL_CALLING = ("edufair_metrics.judge", "edufair_metrics.dialogue", "openai", "httpx", "requests", "aiohttp",
                 "urllib.request", "http.client", "tenacity")
# Names whose import means a model is called or a call is cached.
MODEL_CALLING_NAMES = {"CallCache", "CachedGenerator", "ChatModel", "make_client", "judge_transcripts", "run_posttests"}


def _from_import_names(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            for alias in node.names]


def test_runlog_holds_only_layout_read_build_and_rewrite():
    found = {p.stem for p in (PKG_DIR / "runlog").glob("*.py")}
    assert found == RUNLOG_MODULES, f"runlog/ modules changed: {sorted(found ^ RUNLOG_MODULES)} (model calls go to run/)"


def test_runlog_calls_no_model():
    """runlog/ reads, builds and rewrites records: it imports no model client, judge or dialogue
    generation (judging is run/judging.py, re-judging run/rejudge.py, the post-test run/posttest.py)."""
    bad = [(imp, "a model-calling module") for path, imp in ALL_IMPORTS if layer_of_file(path) == "runlog"
           and any(imp.target == m or imp.target.startswith(m + ".") for m in MODEL_CALLING)]
    bad += [(Imp(str(p.relative_to(REPO)), line, name, f"import {name}"), "a model-calling name")
            for p in sorted((PKG_DIR / "runlog").glob("*.py")) for line, name in _from_import_names(p)
            if name in MODEL_CALLING_NAMES]
    if bad:
        pytest.fail(_report(bad, "edufair_metrics/runlog must not call models"), pytrace=False)


def test_the_purity_check_sees_a_model_import():
    """The rule above catches what it is for: run/judging.py (which calls the judge) would fail it."""
    judging = PKG_DIR / "run" / "judging.py"
    assert any(imp.target.startswith("edufair_metrics.judge.") for imp in imports_of(judging))
    assert {n for _, n in _from_import_names(judging)} & MODEL_CALLING_NAMES == {"CallCache", "judge_transcripts"}


def _calls_of(path: Path, name: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if called == name:
                out.append(node.lineno)
    return out


def test_one_reader_of_record_lines():
    """Only runlog/read.py takes a record out of a samples line (``record_in_line``) and parses it;
    every other reader (reports, rewrites, labels) goes through it (``iter_lines`` / ``iter_records``)."""
    bad = [f"{f.relative_to(REPO)}:{line}" for f in PY_FILES if f != PKG_DIR / "runlog" / "read.py"
           for line in _calls_of(f, "record_in_line")]
    assert not bad, "record lines read outside edufair_metrics/runlog/read.py:\n  " + "\n  ".join(bad)
    assert _calls_of(PKG_DIR / "runlog" / "read.py", "record_in_line"), "the check sees no call in runlog/read.py itself"
