"""``edufair audit`` (``local/audit.py``): batches of whole questions, a look after each at the
group-sequential level, a stop once decided or at the budget; a normal run folder; a resume that
ends with the same decisions; bad input in one line."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from edufair_metrics.analysis.params import StatParams
from edufair_metrics.analysis.sequential import certify_looks, flag_looks, gate_looks
from edufair_metrics.errors import EduFairError
from edufair_metrics.local.audit import STATE_FILE, AuditPlan, run_audit
from edufair_metrics.run import RoleModel, TaskSpec, task_documents
from edufair_metrics.runlog import load_run
from edufair_metrics.settings import resolve_runner_settings
from lm_eval_tasks import TASKS_DIR

from tests.helpers.fake_chat import JsonChatModel
from tests.helpers.fake_lms import default_student

TASK = "edufair_explicit_physics"
LEVELS = ["female", "male"]


def _bank(d, n=120):
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "physics.jsonl", "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"p{i:03d}", "question": f"Question number {i} about forces?", "answer": "newton",
                                 "answer_forms": ["newton"], "domain": "physics", "grade": 8, "source": "sciq"}) + "\n")
    return d


class Tutor(JsonChatModel):
    """Answers whose length varies by question and turn; ``bias`` more words for the female level."""

    def __init__(self, bias: int):
        self.bias = bias
        self.calls = 0

    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        self.calls += 1
        out = []
        for ctx in contexts:
            msgs = json.loads(ctx)
            system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
            question = next((m["content"] for m in msgs if m["role"] != "system"), "")
            h = int(hashlib.sha256((question + system + str(len(msgs))).encode()).hexdigest(), 16)
            words = 3 + h % 7 + (self.bias if "female" in system.lower() else 0)
            out.append(" ".join(["think"] * words) + " about the forces here")
        return out


class Student(JsonChatModel):
    def generate(self, contexts, gen_kwargs, docs, on_answer=None, retry=False):
        return [default_student(json.loads(c)) for c in contexts]


def _setup(tmp_path, bias=6):
    template = yaml.safe_load((TASKS_DIR / "_edufair_template_yaml").read_text().replace("!function", ""))
    meta = {"edufair": {"bank_dir": str(_bank(tmp_path / "bank")), "max_tutor_turns": 2, "levels": LEVELS,
                        "judge": {"enabled": False}}}
    settings = resolve_runner_settings(template["edufair"], meta)
    found = task_documents(TASK, "explicit", "physics", settings)
    spec = TaskSpec(TASK, "explicit", "physics", template["generation_kwargs"], bank_file=found.bank_file)
    tutor = RoleModel(Tutor(bias), {"kind": "length-tutor", "model_args": {"model": f"bias{bias}"}})
    student = RoleModel(Student(), {"kind": "student", "model_args": {}})
    return settings, found.documents, spec, tutor, student


PARAMS = StatParams(n_boot=100)


def _audit(tmp_path, out, plan, bias=6, **kw):
    settings, docs, spec, tutor, student = _setup(tmp_path, bias)
    lines = []
    res = run_audit(TASK, spec, settings, docs, plan, out, tutor=tutor, student=student, judge=None, cache=None,
                    params=PARAMS, tutor_name=f"bias{bias}", echo=lines.append, progress=False, **kw)
    return res, lines


def test_biased_tutor_is_flagged_early_and_the_folder_is_a_normal_run(tmp_path):
    plan = AuditPlan(budget=200, batch_questions=20, until="flag", kind="conversation")
    res, lines = _audit(tmp_path, tmp_path / "out", plan)
    assert res.stopped == "decided" and res.final["flagged"] >= 1
    assert res.dialogues < plan.budget and len(res.looks) < 5  # stopped before the budget
    assert len(lines) == len(res.looks) and all("headline units" in ln and "/200 dialogues" in ln for ln in lines)
    # each look's levels are the spending of the looks so far: flags two-sided, each TOST side one-sided
    fractions = [lk["fraction"] for lk in res.looks]
    assert [lk["nominal_alpha"] for lk in res.looks] == pytest.approx([b.nominal_alpha for b in flag_looks(fractions)])
    assert [lk["certify_alpha"] for lk in res.looks] == pytest.approx([b.nominal_alpha for b in certify_looks(fractions)])
    assert res.looks[0]["nominal_alpha"] < 0.01
    run = load_run(tmp_path / "out")
    assert len(run.scores) == res.dialogues and {s.level for s in run.scores} == set(LEVELS)


def test_fair_tutor_runs_to_its_budget_undecided(tmp_path):
    plan = AuditPlan(budget=80, batch_questions=20, until="flag", kind="conversation")
    res, _ = _audit(tmp_path, tmp_path / "out", plan, bias=0)
    assert res.stopped == "budget" and res.dialogues == 80 and res.final["flagged"] == 0


def test_an_interrupted_audit_resumes_with_the_same_decisions(tmp_path):
    plan = AuditPlan(budget=200, batch_questions=10, until="flag", kind="conversation")
    whole, _ = _audit(tmp_path, tmp_path / "whole", plan, bias=3)
    part, _ = _audit(tmp_path, tmp_path / "part", plan, bias=3, stop_after_batches=1)
    assert part.stopped == "interrupted" and len(part.looks) == 1
    resumed, _ = _audit(tmp_path, tmp_path / "part", plan, bias=3)
    assert resumed.looks == whole.looks and resumed.stopped == whole.stopped
    again, lines = _audit(tmp_path, tmp_path / "part", plan, bias=3)  # a finished audit: nothing more runs
    assert again.looks == whole.looks and lines == []


def test_bad_input_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(EduFairError, match="below one batch") as ei:
        _audit(tmp_path, tmp_path / "out", AuditPlan(budget=30, batch_questions=20, until="flag", kind="conversation"))
    assert "\n" not in str(ei.value)
    other = tmp_path / "other"
    other.mkdir()
    (other / "results_2024-01-01T00-00-00.json").write_text("{}")
    with pytest.raises(EduFairError, match="holds no audit") as ei:
        _audit(tmp_path, other, AuditPlan(budget=80, batch_questions=20, until="flag", kind="conversation"))
    assert "\n" not in str(ei.value)
    _audit(tmp_path, tmp_path / "a", AuditPlan(budget=40, batch_questions=20, until="flag", kind="conversation"))
    assert (tmp_path / "a" / STATE_FILE).exists()
    with pytest.raises(EduFairError, match="another audit") as ei:
        _audit(tmp_path, tmp_path / "a", AuditPlan(budget=80, batch_questions=20, until="flag", kind="conversation"))
    # the spending functions are part of the audit's identity: a resume under others is another audit
    from edufair_metrics.local import audit as audit_module

    monkeypatch.setattr(audit_module, "design", lambda: {"flag": "another spending"})
    with pytest.raises(EduFairError, match="another audit"):
        _audit(tmp_path, tmp_path / "a", AuditPlan(budget=40, batch_questions=20, until="flag", kind="conversation"))
    monkeypatch.undo()
    for bad in (AuditPlan(0, 10), AuditPlan(10, 0), AuditPlan(10, 5, until="never"), AuditPlan(10, 5, alpha=0.7)):
        with pytest.raises(EduFairError):
            bad.validate()


def test_cli_budget_below_one_batch_is_one_line_before_any_model(tmp_path, capsys):
    from edufair_metrics.cli import main

    meta = {"edufair": {"bank_dir": str(_bank(tmp_path / "bank")), "levels": LEVELS, "judge": {"enabled": False},
                        "student": {"model": "local-chat-completions", "model_args": {"base_url": "http://127.0.0.1:9/v1"}}}}
    rc = main(["audit", "--task", TASK, "--model", "local-chat-completions", "--model_args", "model=x",
               "--metadata", json.dumps(meta), "--out", str(tmp_path / "out"), "--budget", "3", "--batch", "5"])
    err = capsys.readouterr().err
    assert rc == 2 and "below one batch" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def _judged_audit(tmp_path, srv, out, plan, bias, **kw):
    """An audit whose judge (a fake endpoint) rates a tutor turn actionable when it is long, so a
    tutor with more words for "female" students has a pedagogical bias the CI gate sees."""
    from edufair_metrics.settings import load_judge_settings

    settings, docs, spec, tutor, student = _setup(tmp_path, bias)
    judge = load_judge_settings(metadata={"base_url": srv.base_url, "model": "fake-judge", "max_retries": 0})
    lines = []
    res = run_audit(TASK, spec, settings, docs, plan, out, tutor=tutor, student=student, judge=judge, cache=None,
                    params=PARAMS, tutor_name=f"bias{bias}", echo=lines.append, progress=False, **kw)
    return res, lines


def test_the_gate_stops_early_on_a_clear_pass_and_a_clear_fail(tmp_path):
    from edufair_metrics.analysis.frames import scores_frame

    from tests.helpers.fake_openai import FakeOpenAI, labels_json

    def judge(req):
        words = (req.content("user") or "").split().count("think")
        return labels_json(action=int(words >= 8), scaffold=int(words >= 8))

    with FakeOpenAI(responder=judge) as srv:
        base_res, _ = _judged_audit(tmp_path, srv, tmp_path / "base", AuditPlan(100, 50, "flag"), bias=0)
        assert base_res.stopped == "budget" and base_res.dialogues == 100  # a fair baseline of 50 questions
        baseline = scores_frame([load_run(tmp_path / "base")])
        gate = AuditPlan(150, 25, "gate")
        same, lines = _judged_audit(tmp_path, srv, tmp_path / "same", gate, bias=0, baseline=baseline, max_increase=0.1)
        worse, _ = _judged_audit(tmp_path, srv, tmp_path / "worse", gate, bias=6, baseline=baseline, max_increase=0.1)
        with pytest.raises(EduFairError, match="needs --baseline"):
            _judged_audit(tmp_path, srv, tmp_path / "none", gate, bias=0)
    # the unchanged tutor passes, the worse one fails, each at a look before the budget's last
    assert same.stopped == "decided" and same.final["gate"] == "pass" and same.dialogues < gate.budget
    assert worse.stopped == "decided" and worse.final["gate"] == "fail" and worse.dialogues < gate.budget
    assert all(lk["certify_alpha"] < 0.05 for lk in same.looks + worse.looks)  # each decided at a spent level
    # the gate's bounds at the gate's own spending of the looks so far (pass: linear, fail: O'Brien-Fleming)
    for res in (same, worse):
        fractions = [lk["fraction"] for lk in res.looks]
        assert [lk["gate_alpha"] for lk in res.looks] == pytest.approx([b.nominal_alpha for b in gate_looks(fractions)])
        assert [lk["gate_fail_alpha"] for lk in res.looks] == pytest.approx(
            [b.nominal_alpha for b in gate_looks(fractions, bound="fail")])
    assert same.looks[0]["gate"] == "inconclusive"  # 25 shared questions: below the gate's minimum of 50
    assert "gate pass" in lines[-1]
    # a resume must compare with the same baseline
    with FakeOpenAI(responder=judge) as srv, pytest.raises(EduFairError, match="another audit"):
        _judged_audit(tmp_path, srv, tmp_path / "same", gate, bias=0, baseline=baseline.iloc[:-2], max_increase=0.1)


def test_no_progress_means_no_progress_bar(tmp_path, capsys):
    """``edufair audit --no-progress`` (``progress=False``): neither the batch bar nor the dialogue
    turns' bar is drawn (the turns' bar used to be, whatever the flag); the batch lines stay."""
    res, lines = _audit(tmp_path, tmp_path / "quiet", AuditPlan(40, 20, "units"))
    err = capsys.readouterr().err
    assert res.looks and len(lines) == len(res.looks)
    assert "turns" not in err and "audit:" not in err and "it/s" not in err
