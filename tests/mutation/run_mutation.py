"""Mutation testing of the decision code: how many small mistakes in it would the tests catch?

    python -m tests.mutation.run_mutation [--module PATH ...] [--sample N] [--seed S] [--shard I/N]
                                          [--out FILE] [--rerun FILE ...] [--resume FILE ...]
    python -m tests.mutation.run_mutation --report FILE ...   # the table of earlier --out files
    python -m tests.mutation.run_mutation --named              # the mistakes named.toml lists

One small change at a time (cosmic-ray's operators: a flipped comparison, ``and``/``or``, ``&``/``|``,
``+ - * /`` swapped, a number ±1, ``True``/``False``, an added or dropped ``not`` / ``~``, a loop
that never runs, ``break``/``continue``) is made in a *copy* of the working tree (the tree itself is
never written), and the module's own test files (``mutation.toml``) run against it with
``-x -m "not slow"``, each run a fork of this process (numpy, pandas, scipy and pytest loaded once;
the project's own modules are imported afresh from the copy). A mutant is *caught* when those
tests fail (or error, or run past ``timeout_factor`` × the clean run), *survives* when they pass.
Mutants listed in ``equivalent.toml`` (changes with no observable effect, each with the reason)
are left out of the score: score = caught / (caught + survived).

``--sample N`` draws N mutants per module with ``random.Random(f"{seed}:{module}")`` (``--sample
0``: all of them) and runs them in that random order, saving every outcome to ``--out`` as it
comes: a run stopped part-way has run a random part of its sample, and ``--resume`` continues it.
The score is reported with its two-sided 95% Clopper–Pearson interval and one-sided 95% lower
bound. Each mutant costs one run of the module's tests (seconds on an idle machine, minutes on a
loaded one): run it under ``nice``, one process per module or ``--shard``.

Why cosmic-ray: it is maintained, installs offline from the wheel, exposes its operators and its
mutator as a library (so each mutant can run its own module's tests, which mutmut 3's single
whole-suite run and its ``mutants/`` copy layout do not allow without running all ~1,800 tests per
mutant), and it edits source text with parso, so the mutated line is shown exactly as written.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONFIG = HERE / "mutation.toml"
EQUIVALENT = HERE / "equivalent.toml"
NAMED = HERE / "named.toml"

_ARITH = ("Add", "Sub", "Mul", "Div")
_COMPARE = ("Eq", "NotEq", "Lt", "LtE", "Gt", "GtE")
# The operators of the audit: small, plausible mistakes (not Add -> BitXor, which only raise).
OPERATORS = (
    [f"core/ReplaceBinaryOperator_{a}_{b}" for a in _ARITH for b in _ARITH if a != b]
    + ["core/ReplaceBinaryOperator_BitAnd_BitOr", "core/ReplaceBinaryOperator_BitOr_BitAnd"]
    + [f"core/ReplaceComparisonOperator_{a}_{b}" for a in _COMPARE for b in _COMPARE if a != b]
    + ["core/ReplaceComparisonOperator_Is_IsNot", "core/ReplaceComparisonOperator_IsNot_Is"]
    + ["core/ReplaceAndWithOr", "core/ReplaceOrWithAnd", "core/AddNot", "core/ReplaceUnaryOperator_Delete_Not",
       "core/ReplaceUnaryOperator_Delete_Invert", "core/ReplaceUnaryOperator_USub_UAdd", "core/ReplaceTrueWithFalse",
       "core/ReplaceFalseWithTrue", "core/NumberReplacer", "core/ReplaceBreakWithContinue",
       "core/ReplaceContinueWithBreak", "core/ZeroIterationForLoop"]
)


@dataclass
class Mutant:
    module: str
    operator: str
    occurrence: int
    line: int
    before: str  # the changed line as written
    after: str  # the same line mutated
    outcome: str = ""  # caught | survived | equivalent | error
    seconds: float = 0.0
    failed_test: str = ""

    @property
    def key(self) -> str:
        """What ``equivalent.toml`` names: stable across edits elsewhere in the module."""
        return f"{self.operator.removeprefix('core/')}: {self.before.strip()}  ->  {self.after.strip()}"


def load_config(path: Path = CONFIG) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def load_equivalent(path: Path = EQUIVALENT) -> dict[str, dict[str, str]]:
    """module -> {mutant key: why it has no observable effect}."""
    if not path.exists():
        return {}
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    return {m: {e["mutant"]: e["why"] for e in entries} for m, entries in data.get("equivalent", {}).items()}


def stale_entries(root: Path = ROOT) -> list[str]:
    """Entries of ``equivalent.toml`` whose line is no longer in their module, and changes of
    ``named.toml`` whose text is not (the code was rewritten: the entry must be rewritten too)."""
    out = []
    for mod, entries in load_equivalent().items():
        lines = {line.strip() for line in (root / mod).read_text(encoding="utf-8").split("\n")}
        out += [f"equivalent.toml: {mod}: {key}" for key in entries
                if key.partition(": ")[2].partition("  ->  ")[0] not in lines]
    with open(NAMED, "rb") as fh:
        named = tomllib.load(fh).get("named", {})
    for mod, changes in named.items():
        source = (root / mod).read_text(encoding="utf-8")
        for c in changes:
            froms = [c["from"]] if isinstance(c["from"], str) else c["from"]
            if any(f not in source for f in froms):
                out.append(f"named.toml: {mod}: {c['what']}")
    return out


def _operator(name: str):
    import cosmic_ray.plugins

    return cosmic_ray.plugins.get_operator(name)()


def enumerate_mutants(module: str, root: Path = ROOT, *, with_after: bool = True) -> list[Mutant]:
    """Every mutant of ``module`` (a path relative to ``root``) under :data:`OPERATORS`; without
    ``with_after`` the mutated line is left empty (one parse per operator instead of one per
    mutant: :func:`fill_after` adds it to the few that are sampled)."""
    from cosmic_ray.ast import ast_nodes, get_ast

    source = (root / module).read_text(encoding="utf-8")
    tree = get_ast(source)
    lines = source.split("\n")
    out: list[Mutant] = []
    for name in OPERATORS:
        op = _operator(name)
        # the order cosmic-ray's MutationVisitor counts occurrences in, so occurrence i is the i-th
        positions = [pos for node in ast_nodes(tree) for pos in op.mutation_positions(node)]
        for occurrence, (start, _end) in enumerate(positions):
            out.append(Mutant(module, name, occurrence, start[0], lines[start[0] - 1], ""))
    if with_after:
        fill_after(out, source)
    return out


def fill_after(mutants: list[Mutant], source: str) -> None:
    """Set each mutant's ``after``: its line as mutated."""
    from cosmic_ray.mutating import mutate_code

    lines = source.split("\n")
    for m in mutants:
        new_lines = mutate_code(source, _operator(m.operator), m.occurrence).split("\n")
        changed = [t for t in difflib.unified_diff(lines, new_lines, n=0, lineterm="")
                   if t.startswith("+") and not t.startswith("+++")]
        m.after = changed[0][1:] if changed else new_lines[m.line - 1] if m.line <= len(new_lines) else ""


# third-party libraries every module's tests import: loaded once in this process, so that each
# mutant's run (a fork of it) starts without paying their import again (seconds per mutant here)
_PRELOAD = ("numpy", "pandas", "scipy.stats", "scipy.optimize", "scipy.special", "pytest")
_OWN = ("edufair_metrics", "lm_eval_tasks", "tests")


def _env_for(cwd: Path) -> dict[str, str]:
    # the scratch tree first; other entries (a dependency folder) stay, the checkout itself does not
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(cwd), *rest]), PYTHONDONTWRITEBYTECODE="1")


def _pytest(tests: list[str], args: list[str], cwd: Path, timeout: float | None) -> tuple[int, str, float]:
    """Run pytest on ``tests`` in ``cwd``: (exit status, -1 on a timeout; its output; seconds). In a
    fork of this process where there is one (the project's own packages unloaded in the child, so
    it imports the scratch tree's), else in a new interpreter."""
    if os.environ.get("EDUFAIR_MUTATION_SUBPROCESS") or not hasattr(os, "fork"):
        return _pytest_subprocess(tests, args, cwd, timeout)
    for name in _PRELOAD:
        __import__(name)
    env = _env_for(cwd)
    t0 = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 3
            try:
                os.setpgid(0, 0)  # its own process group: a timeout kills what its tests started too
                os.dup2(log.fileno(), 1)
                os.dup2(log.fileno(), 2)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                sys.dont_write_bytecode = True
                for mod in [m for m in sys.modules if m.split(".")[0] in _OWN]:
                    del sys.modules[mod]
                sys.path[:] = [str(cwd)] + [p for p in sys.path if p not in ("", ".") and Path(p).resolve() != ROOT]
                import importlib

                importlib.invalidate_caches()
                import pytest

                code = int(pytest.main([*args, *tests]))
            except BaseException:  # noqa: BLE001 - report anything as a failed run
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        status = None
        try:
            while status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = os.waitstatus_to_exitcode(st)
                elif timeout is not None and time.monotonic() - t0 > timeout:
                    return -1, "timeout", time.monotonic() - t0
                else:
                    time.sleep(0.05)
        finally:
            if status is None:  # timed out, or this process is stopping: the child's run goes too
                _kill_group(pid)
                os.waitpid(pid, 0)
        log.seek(0)
        return status, log.read(), time.monotonic() - t0


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _pytest_subprocess(tests: list[str], args: list[str], cwd: Path, timeout: float | None) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", *args, *tests], cwd=cwd, env=_env_for(cwd),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout", time.monotonic() - t0
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0]
    return ""


def copy_tree(root: Path = ROOT) -> Path:
    """A scratch copy of what the tests need (the package, the tests, the configs)."""
    dest = Path(tempfile.mkdtemp(prefix="edufair-mutation-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "mutants")
    for part in ("edufair_metrics", "lm_eval_tasks", "tests", "configs"):
        if (root / part).exists():
            shutil.copytree(root / part, dest / part, ignore=ignore, symlinks=True)
    for f in ("setup.cfg", "pyproject.toml", "README.md"):
        if (root / f).exists():
            shutil.copy2(root / f, dest / f)
    return dest


def run_module(module: str, spec: dict, run_cfg: dict, *, sample: int, seed: int, equivalent: dict[str, str],
               work: Path, previous: dict[tuple[str, int], Mutant] | None = None, shard: tuple[int, int] = (1, 1),
               keep: tuple[str, ...] = ("caught",), progress=None, only_previous: bool = False,
               log=print) -> list[Mutant]:
    """Run the (sampled) mutants of one module in the scratch tree ``work``. ``previous``: outcomes
    of an earlier run of the same module source; those whose outcome is in ``keep`` are kept
    (caught ones after tests were only added; also survived ones when a stopped run resumes), the
    others run again. ``progress(mutants)`` is called after each mutant (to save them)."""
    tests = list(spec["tests"])
    args = list(run_cfg.get("pytest_args", []))
    mutants = enumerate_mutants(module, work, with_after=False)
    total = len(mutants)
    # in the sample's random order: a run stopped part-way has run a random part of the sample
    mutants = random.Random(f"{seed}:{module}").sample(mutants, sample if sample and sample < total else total)
    mutants = mutants[shard[0] - 1::shard[1]]  # shard i of n: every n-th mutant of the sample
    previous = previous or {}
    if only_previous:  # the mutants an earlier, stopped run reached, and no others
        mutants = [m for m in mutants if (m.operator, m.occurrence) in previous]
    fill_after(mutants, (work / module).read_text(encoding="utf-8"))
    rc, output, clean = _pytest(tests, args, work, None)
    if rc != 0:
        raise SystemExit(f"the clean tests of {module} fail (exit {rc}):\n{output[-3000:]}")
    timeout = max(30.0, float(run_cfg.get("timeout_factor", 4.0)) * clean)
    log(f"{module}: {len(mutants)} of {total} mutants; clean run {clean:.1f} s")
    path = work / module
    original = path.read_text(encoding="utf-8")
    from cosmic_ray.mutating import mutate_code

    try:
        for i, m in enumerate(mutants, 1):
            old = previous.get((m.operator, m.occurrence))
            if m.key in equivalent:
                m.outcome = "equivalent"
            elif old is not None and old.key == m.key and old.outcome in keep:
                m.outcome, m.seconds, m.failed_test = old.outcome, old.seconds, old.failed_test
            else:
                mutated = mutate_code(original, _operator(m.operator), m.occurrence)
                path.write_text(mutated, encoding="utf-8")
                rc, output, m.seconds = _pytest(tests, args, work, timeout)
                path.write_text(original, encoding="utf-8")
                if rc == 0:
                    m.outcome = "survived"
                # failed; errored at collection (2), or a node id not found (4) because the mutant breaks the
                # import (the clean run with the same arguments passed); timed out
                elif rc in (1, 2, 4, -1):
                    m.outcome = "caught"
                    m.failed_test = "timeout" if rc == -1 else _first_failure(output)
                else:
                    m.outcome = "error"
                    m.failed_test = f"pytest exit {rc}"
            log(f"  [{i}/{len(mutants)}] {m.outcome:10s} line {m.line}: {m.key}")
            if progress is not None:
                progress(mutants)
    finally:
        path.write_text(original, encoding="utf-8")
    return mutants


def score(mutants: list[Mutant]) -> tuple[int, int, int, float, float]:
    """(caught, survived, equivalent, score, its one-sided 95% Clopper–Pearson lower bound): a
    sampled score, so the bound says how low the module's true score may be (27 of 27: 0.895)."""
    from scipy.stats import beta

    caught = sum(m.outcome == "caught" for m in mutants)
    survived = sum(m.outcome == "survived" for m in mutants)
    equiv = sum(m.outcome == "equivalent" for m in mutants)
    n = caught + survived
    s = caught / n if n else float("nan")
    low = float(beta.ppf(0.05, caught, survived + 1)) if caught else 0.0
    return caught, survived, equiv, s, low


def interval(caught: int, survived: int) -> tuple[float, float]:
    """The two-sided 95% Clopper–Pearson interval of the score caught / (caught + survived)."""
    from scipy.stats import beta

    n = caught + survived
    if not n:
        return float("nan"), float("nan")
    low = float(beta.ppf(0.025, caught, survived + 1)) if caught else 0.0
    high = float(beta.ppf(0.975, caught + 1, survived)) if survived else 1.0
    return low, high


def table(results: dict[str, list[Mutant]], totals: dict[str, int] | None = None) -> str:
    """The score table (markdown) of ``results`` (module -> its mutants run)."""
    totals = totals or {}
    out = ["| module | mutants sampled (of all) | caught | survived | equivalent | score | 95% CI | "
           "one-sided 95% lower bound |", "|---|---|---|---|---|---|---|---|"]
    for mod, ms in results.items():
        c, s, e, sc, low = score(ms)
        lo, hi = interval(c, s)
        of = f" of {totals[mod]}" if mod in totals else ""
        out.append(f"| `{mod}` | {len(ms)}{of} | {c} | {s} | {e} | {100 * sc:.0f}% | "
                   f"[{100 * lo:.1f}%, {100 * hi:.1f}%] | ≥ {100 * low:.1f}% |")
    return "\n".join(out)


def merge_runs(paths: list[Path], equivalent: dict[str, dict[str, str]] | None = None) -> dict[str, list[Mutant]]:
    """The mutants of several ``--out`` files (shards of one sample, or a run and its ``--rerun``)
    per module, a later file's outcome of the same mutant replacing an earlier one's; mutants
    ``equivalent.toml`` lists now are counted as equivalent."""
    equivalent = equivalent if equivalent is not None else load_equivalent()
    merged: dict[str, dict[tuple[str, int], Mutant]] = {}
    for path in paths:
        for mod, ms in json.loads(Path(path).read_text()).items():
            for d in ms:
                m = Mutant(**d)
                if m.key in equivalent.get(mod, {}):
                    m.outcome = "equivalent"
                merged.setdefault(mod, {})[(m.operator, m.occurrence)] = m
    return {mod: sorted(ms.values(), key=lambda m: (m.line, m.operator, m.occurrence)) for mod, ms in merged.items()}


def run_named(modules: list[str], cfg: dict, work: Path, log=print) -> list[tuple[str, str, str]]:
    """The changes ``named.toml`` lists, each applied alone: (module, what, caught | SURVIVED |
    not applicable)."""
    with open(NAMED, "rb") as fh:
        named = tomllib.load(fh).get("named", {})
    args = list(cfg.get("run", {}).get("pytest_args", []))
    out = []
    for mod in modules:
        path = work / mod
        original = path.read_text(encoding="utf-8")
        try:
            for change in named.get(mod, []):
                edits = list(zip(*(([change[k]] if isinstance(change[k], str) else change[k]) for k in ("from", "to"))))
                if any(old not in original for old, _ in edits):
                    outcome = "not applicable"
                else:
                    mutated = original
                    for old, new in edits:
                        mutated = mutated.replace(old, new, 1)
                    path.write_text(mutated, encoding="utf-8")
                    rc, output, _ = _pytest(list(cfg["modules"][mod]["tests"]), args, work, None)
                    path.write_text(original, encoding="utf-8")
                    outcome = "SURVIVED" if rc == 0 else f"caught ({_first_failure(output) or f'exit {rc}'})"
                log(f"{mod}: {change['what']}: {outcome}")
                out.append((mod, change["what"], outcome))
        finally:
            path.write_text(original, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", help="a module of mutation.toml (default: all)")
    ap.add_argument("--sample", type=int, default=40, help="mutants per module (0: all; default 40)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--out", type=Path, help="write every mutant's outcome here (JSON)")
    ap.add_argument("--shard", default="1/1", help="i/n: run only every n-th mutant of the sample, from the i-th "
                                                     "(parallel processes; add up their tables)")
    ap.add_argument("--named", action="store_true", help="run the changes named.toml lists instead of a sample")
    ap.add_argument("--rerun", type=Path, nargs="+", help="a JSON of an earlier run (same seed and sample, same module "
                                                "source): keep its caught mutants, run the rest again")
    ap.add_argument("--resume", type=Path, nargs="+", help="the --out file of a stopped run (same seed, sample, shard and "
                                                 "module source): keep every outcome it has, run the rest")
    ap.add_argument("--only-listed", action="store_true", help="with --rerun: run only the mutants those files "
                                                                 "hold (the part of the sample a stopped run reached)")
    ap.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                    help="print the score table of earlier --out files (shards, a run and its reruns) and exit")
    ns = ap.parse_args(argv)
    if ns.report:
        results = merge_runs(ns.report)
        totals = {mod: len(enumerate_mutants(mod, with_after=False)) for mod in results if (ROOT / mod).exists()}
        print(table(results, totals))
        for mod, ms in results.items():
            for m in ms:
                if m.outcome in ("survived", "error"):
                    print(f"{m.outcome}: {mod}:{m.line} {m.key}")
        return 0
    cfg = load_config()
    for entry in stale_entries():
        print(f"warning: stale entry (its code is gone), rewrite or remove it: {entry}")
    modules = ns.module or list(cfg["modules"])
    unknown = [m for m in modules if m not in cfg["modules"]]
    if unknown:
        ap.error(f"not in {CONFIG.name}: {', '.join(unknown)}")
    if ns.list:
        for mod in modules:
            for m in enumerate_mutants(mod):
                print(f"{mod}:{m.line} {m.key}")
        return 0
    # a SIGTERM unwinds (the finally blocks restore the module and remove the scratch tree)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if ns.named:
        work = copy_tree()
        try:
            named = run_named(modules, cfg, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 1 if any(o == "SURVIVED" for _, _, o in named) else 0
    i, _, n = ns.shard.partition("/")
    shard = (int(i), int(n))
    equivalent = load_equivalent()
    previous: dict[str, dict[tuple[str, int], Mutant]] = {}
    for earlier in ns.resume or ns.rerun or []:  # a later file's outcome of the same mutant wins
        for mod, ms in json.loads(earlier.read_text()).items():
            previous.setdefault(mod, {}).update({(d["operator"], d["occurrence"]): Mutant(**d) for d in ms})
    keep = ("caught", "survived", "equivalent") if ns.resume else ("caught",)
    work = copy_tree()
    results: dict[str, list[Mutant]] = {}

    def save(current: list[Mutant] | None = None, mod: str | None = None) -> None:
        # written after every mutant (temp file, then rename), so a stopped run can --resume
        if not ns.out:
            return
        done = dict(results)
        if current is not None:
            done[mod] = [m for m in current if m.outcome]
        tmp = ns.out.with_name(ns.out.name + ".tmp")
        tmp.write_text(json.dumps({k: [asdict(m) for m in ms] for k, ms in done.items()}, indent=1))
        tmp.replace(ns.out)

    try:
        for mod in modules:
            results[mod] = run_module(mod, cfg["modules"][mod], cfg.get("run", {}), sample=ns.sample, seed=ns.seed,
                                      equivalent=equivalent.get(mod, {}), work=work,
                                      previous=previous.get(mod), shard=shard, keep=keep,
                                      only_previous=ns.only_listed,
                                      progress=lambda ms, mod=mod: save(ms, mod))
            save()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    totals = {mod: len(enumerate_mutants(mod, with_after=False)) for mod in results}
    print("\n" + table(results, totals))
    for mod, ms in results.items():
        for m in ms:
            if m.outcome in ("survived", "error"):
                print(f"{m.outcome}: {mod}:{m.line} {m.key}")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
