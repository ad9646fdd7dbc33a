"""Planted vs null rates of EduFair's three extensions with scripted tutors (not a pytest test).

    python tests/analysis/sim_axes.py [--seeds 10] [--questions 24] [--n-boot 300]

Each replicate runs a task end to end (``run.run_task``: scripted tutor and student, no judge, no
network) on a bank of ``--questions`` physics questions and analyses it as ``edufair report`` does
(``analysis.params.analyse_frame``). The tutor's noise is a hash of (seed, question, level cue,
turn), so replicates differ only by their seed. Scenarios (tests/run/test_axes_*.py plant the same):

* Intersectional Explicit: ``planted``: the tutor's turns are 4 words longer for low-income girls
  only (an interaction in one cell); ``null``: no effect. Rates: the Gender × SES interaction
  flagged on tutor_avg_word; any other intersectional contrast of tutor_avg_word flagged outside
  the two simple effects containing the cell; any intersectional unit flagged (all metrics).
* Many names per group (k = 3, seed 0): ``one name``: 6 more words for Jamal only; ``group``: 4
  more words for every Black name; ``null``. Rates on Black vs White, tutor_avg_word: flagged
  (a group gap), read as a name artefact; any names unit flagged and any name artefact (null).
* Outcome fairness (Explicit with ``edufair.posttest``): the tutor teaches the key idea with
  probability 0.8, for girls 0.2 (``planted``) or 0.5 for everyone (``null``); the student answers
  the post-test correctly when it was taught. Rates: Gender flagged on posttest_correct, on
  learned_unrevealed; any outcome unit flagged.

Prints one table of rates (share of replicates) per scenario. Minutes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

from edufair_metrics.analysis.frames import scores_frame
from edufair_metrics.analysis.params import StatParams, analyse_frame
from edufair_metrics.run import RoleModel, TaskSpec, run_task, task_documents
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.axes import Scripted, noisy_tutor, plain_student, write_axes_bank
from tests.run.test_axes_posttest import FEMALE, learning_student, teaching_tutor

LOW_INCOME_GIRL = "female student from a low-income family"
BLACK = ("Jamal", "Malik", "Rashad", "Jasmine", "Ebony", "Nia")  # the Black names drawn with seed 0, k = 3


def run(task: str, condition: str, tutor, student, n_questions: int, n_boot: int, **extra):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    with tempfile.TemporaryDirectory() as tmp:
        bank = write_axes_bank(Path(tmp) / "bank", n_questions)
        settings = resolve_runner_settings(template["edufair"], {"edufair": {
            "bank_dir": str(bank), "max_tutor_turns": 2, "judge": {"enabled": False}, "preflight": False, **extra}})
        found = task_documents(task, condition, "physics", settings)
        spec = TaskSpec(task, condition, "physics", template["generation_kwargs"], bank_file=found.bank_file,
                        protocol=found.protocol)
        result = run_task(spec, settings, found.documents,
                          tutor=RoleModel(Scripted(tutor), {"kind": "scripted", "model_args": {}}),
                          student=RoleModel(Scripted(student), {"kind": "scripted-student", "model_args": {}}),
                          judge=None, cache=None, progress=False)
    return analyse_frame(scores_frame([r.scores for r in result.records]), StatParams(n_boot=n_boot))


def _flag(rows) -> bool:
    return bool((rows["verdict"] == "flag").any())


def intersectional(seed: str, planted: bool, nq: int, n_boot: int) -> dict[str, bool]:
    extra = (lambda s, q: 4 if LOW_INCOME_GIRL in s else 0) if planted else (lambda s, q: 0)
    grid, units = run("edufair_intersectional_physics", "intersectional", noisy_tutor(extra, seed), plain_student,
                      nq, n_boot)
    u = units[units["condition"] == "intersectional"]
    w = u[u["metric"] == "tutor_avg_word"]
    expected = {"Gender within low-income", "SES within female", "Gender × SES interaction"}
    return {"interaction flagged": _flag(w[w["contrast"] == "Gender × SES interaction"]),
            "other contrast flagged (avg words)": _flag(w[~w["contrast"].isin(expected)]),
            "any unit flagged": _flag(u)}


def names(seed: str, scenario: str, nq: int, n_boot: int) -> dict[str, bool]:
    who = {"one name": ("Jamal",), "group": BLACK, "null": ()}[scenario]
    words = 6 if scenario == "one name" else 4

    def extra(system: str, question: str) -> int:
        return words if any(f"name is {n}." in system for n in who) else 0

    grid, units = run("edufair_implicit_names_physics", "implicit_names", noisy_tutor(extra, seed), plain_student,
                      nq, n_boot)
    g = grid[(grid["condition"] == "implicit_names")]
    row = g[(g["metric"] == "tutor_avg_word") & (g["dimension"] == "black_white")].iloc[0]
    return {"Black vs White flagged (group gap)": row["verdict"] == "flag",
            "Black vs White a name artefact": row["name_check"] == "name artefact",
            "any names unit flagged": _flag(units[units["condition"] == "implicit_names"]),
            "any name artefact": bool((g["name_check"] == "name artefact").any())}


def outcome(seed: str, planted: bool, nq: int, n_boot: int) -> dict[str, bool]:
    p = (lambda s: 0.2 if FEMALE in s else 0.8) if planted else (lambda s: 0.5)
    grid, units = run("edufair_explicit_physics", "explicit", teaching_tutor(p, seed=seed), learning_student, nq,
                      n_boot, posttest=True)
    g = grid[grid["metric_kind"] == "outcome"]
    gender = g[g["dimension"] == "gender"]
    return {"Gender flagged on posttest_correct": _flag(gender[gender["metric"] == "posttest_correct"]),
            "Gender flagged on learned_unrevealed": _flag(gender[gender["metric"] == "learned_unrevealed"]),
            "any outcome unit flagged": _flag(units[units["metric_kind"] == "outcome"])}


def _rates(label: str, outcomes: list[dict[str, bool]]) -> None:
    print(f"\n{label} ({len(outcomes)} replicates)")
    for key in outcomes[0]:
        print(f"  {key:<42} {sum(o[key] for o in outcomes) / len(outcomes):.2f}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--questions", type=int, default=24)
    ap.add_argument("--n-boot", type=int, default=300)
    args = ap.parse_args(argv)
    seeds = [f"sim{i}" for i in range(args.seeds)]
    nq, nb = args.questions, args.n_boot
    _rates("Intersectional, planted (low-income girls +4 words)", [intersectional(s, True, nq, nb) for s in seeds])
    _rates("Intersectional, null", [intersectional(s, False, nq, nb) for s in seeds])
    for scenario in ("one name", "group", "null"):
        _rates(f"Many names per group, {scenario}", [names(s, scenario, nq, nb) for s in seeds])
    _rates("Outcome, planted (girls taught with p 0.2, others 0.8)", [outcome(s, True, nq, nb) for s in seeds])
    _rates("Outcome, null (p 0.5 for everyone)", [outcome(s, False, nq, nb) for s in seeds])


if __name__ == "__main__":
    main()
