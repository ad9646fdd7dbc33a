"""Answers that cannot be stored fail their own request, never the run: through the real lm_eval CLI,
a tutor, a student and a judge endpoint that answer some requests, on every attempt, with a lone
surrogate (a valid JSON escape, ``\\ud800``, that is no UTF-8 text), NUL bytes, or a 1 MB answer.
Each such request is a ``bad_body`` failure, sent again (EduFair's re-sends), then its dialogue fails
(tutor, student) or its label is missing (judge); every other dialogue completes, the results and
samples are saved, nothing unstorable reaches the samples file or the call cache, and a rerun
finishes the same way."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from edufair_metrics.dialogue.generation import DIALOGUE_RETRIES
from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import EduFairFake, answer, call_key, cli_env, lm_eval_argv, results, run_cli, samples
from tests.helpers.fake_openai import Reply

pytestmark = pytest.mark.slow

PAYLOADS = {
    "surrogate": "Let us look at the force \ud800 acting here.",
    "nul": "Let us look at the force\x00\x00 acting here.",
    "megabyte": "force " * 170_000,  # ~1 MB
}
JUDGE_TAILS = {"surrogate": "\ud800", "nul": "\x00", "megabyte": " " * 1_000_000}


class BadAnswers:
    """The first three distinct tutor requests, the first three distinct second-turn student
    requests and the first three distinct judge requests each get one payload, on every attempt."""

    def __init__(self) -> None:
        self.assigned: dict[tuple[str, str], str] = {}
        self.per_role: Counter = Counter()
        self.served: Counter = Counter()

    def __call__(self, req, n):
        key = call_key(req)
        role = key[0]
        if role not in ("tutor", "student", "judge") or (role == "student" and len(req.messages) < 4):
            return None  # the student's opening answer is one request for all nine levels
        if key not in self.assigned and self.per_role[role] < len(PAYLOADS):
            self.assigned[key] = list(PAYLOADS)[self.per_role[role]]
            self.per_role[role] += 1
        name = self.assigned.get(key)
        if name is None:
            return None
        self.served[(role, name)] += 1
        # the judge's: valid labels and the payload after them (trailing whitespace is valid JSON)
        return Reply(answer(req) + JUDGE_TAILS[name] if role == "judge" else PAYLOADS[name])


def test_unstorable_answers_fail_their_request_not_the_run(tmp_path):
    bank = write_bank(tmp_path / "bank", n=1)
    bad = BadAnswers()
    with EduFairFake(behaviour=bad) as fake:
        out, cache = tmp_path / "out", tmp_path / "cache"
        argv = lm_eval_argv(fake.url, bank, out, max_turns=2, judge={"max_retries": 1, "backoff_base_s": 0.01,
                                                                      "backoff_max_s": 0.02})
        r = run_cli(argv, cli_env(cache), tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert bad.per_role == {"tutor": 3, "student": 3, "judge": 3}
        # each bad dialogue request was sent 1 + DIALOGUE_RETRIES times, each bad judge request 1 + max_retries
        for (role, _name), n in bad.served.items():
            assert n == (1 + DIALOGUE_RETRIES if role != "judge" else 2), (role, _name, n)

        text = next(out.rglob("samples_*.jsonl")).read_text(encoding="utf-8")  # valid UTF-8 throughout
        # no payload stored as text: only escaped excerpts of it (a raw answer's "\\ud800")
        assert len(text.encode()) < 1_000_000 and not re.search(r"(?<!\\)\\u(0000|d800)", text)
        recs = samples(out)
        failed = Counter((rec["transcript"]["stop_reason"], rec["transcript"]["error_kind"]) for rec in recs)
        assert failed == {("tutor_failed", "bad_body"): 3, ("student_failed", "bad_body"): 3, ("max_turns", None): 3}
        for rec in recs:
            if rec["transcript"]["error_kind"]:
                assert f"after {1 + DIALOGUE_RETRIES} attempts" in rec["transcript"]["error"]
        missing = [j for rec in recs for j in rec["judgements"] if j["status"] == "missing"]
        assert [j["kind"] for j in missing] == ["bad_body"] * 3
        assert results(out)["failed_dialogues,judged"] == 6
        calls = json.loads(next(out.rglob("results_*.json")).read_text())["configs"]["edufair_explicit_physics"]["metadata"]["edufair_calls"]
        assert calls["tutor"]["failed_by_kind"] == {"bad_body": 3} and calls["student"]["failed_by_kind"] == {"bad_body": 3}
        assert calls["judge"]["failed_by_kind"] == {"bad_body": 3}

        # nothing bad was cached: a rerun sends exactly those requests again, and ends the same way
        bad.served.clear()
        fake.reset()
        r = run_cli(argv, cli_env(cache), tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert set(bad.served) == {(role, name) for role in ("tutor", "student", "judge") for name in PAYLOADS}
