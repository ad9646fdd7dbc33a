"""Fault injection through the real lm_eval CLI: ~20% of calls fail in mixed ways.

"Match" is defined per call key (role, exact messages): a key whose LAST request got a fault is a
final failure (its dialogue is marked failed, or its judge label missing); a key that got a fault
and later a reply was retried successfully and must not be counted. The test checks the run's
counts (results ``failed_dialogues``, ``missing_label_rate``, the per-level summary and each
record's ``error_kind``) against the faults the endpoint actually served."""

from __future__ import annotations

import hashlib
import re

import pytest

from edufair_metrics.dialogue.generation import DIALOGUE_RETRIES

from tests.helpers.bank import write_bank
from tests.helpers.edufair_cli import EduFairFake, call_key, cli_env, lm_eval_argv, results, run_cli, samples
from tests.helpers.fake_openai import Drop, EmptyBody, Hang, HTTPError, Raw, Reply

pytestmark = pytest.mark.slow

SEED = "faults-1"
# fault -> failure kind the run must report for a dialogue call that finally fails with it
DIALOGUE_FAULTS = [
    (lambda: HTTPError(429), "http_429"),
    (lambda: HTTPError(500), "http_5xx"),
    (lambda: Drop(), "connection"),
    (lambda: Reply(None), "empty_output"),  # null content: lm-eval's placeholder "" is NOT a turn
    (lambda: Hang(4), "timeout"),  # client timeout=2 s
    (lambda: Raw(b'{"id": "x", "object": "chat.completion"}'), "bad_body"),  # no choices: NOT an empty answer
]
JUDGE_FAULTS = [
    lambda: HTTPError(500),
    lambda: HTTPError(429),
    lambda: Raw(b'{"choices": [{"message": {"content": "{\\"student_mis'),  # truncated/malformed JSON
    lambda: EmptyBody(),
    lambda: Reply("I refuse to grade this."),  # not the labels JSON
]


def _u(*parts) -> float:
    return int(hashlib.sha256(repr((SEED,) + parts).encode()).hexdigest()[:8], 16) / 2**32


class Injector:
    """Per key: 10% persistent faults (every attempt), 10% transient (first attempt only)."""

    def __init__(self) -> None:
        self.served: dict[tuple, list[str]] = {}  # key -> "ok" or fault kind per request
        self.on = True

    def __call__(self, req, n):
        key = call_key(req)
        role = key[0]
        b = None
        if self.on and role in ("student", "tutor", "judge"):
            u = _u(key)
            persistent, transient = u < 0.10, 0.10 <= u < 0.20
            if persistent or (transient and n == 1):
                if role == "judge":
                    b, kind = JUDGE_FAULTS[int(_u(key, "kind") * len(JUDGE_FAULTS))](), "judge"
                else:
                    make, kind = DIALOGUE_FAULTS[int(_u(key, "kind") * len(DIALOGUE_FAULTS))]
                    b = make()
        self.served.setdefault(key, []).append(kind if b is not None else "ok")
        return b


def test_faults_counted_missing_never_filled_and_rerun_fills_gaps(tmp_path):
    bank = write_bank(tmp_path / "bank", n=1)
    inj = Injector()
    judge = {"max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 2}
    with EduFairFake(behaviour=inj) as fake:
        out, cache = tmp_path / "out", tmp_path / "cache"
        argv = lm_eval_argv(fake.url, bank, out, judge=judge, model_args_extra="timeout=2")
        r = run_cli(argv, cli_env(cache), tmp_path, timeout=240)
        assert r.returncode == 0, r.stderr[-3000:]

        final = {k: v[-1] for k, v in inj.served.items() if v[-1] != "ok"}
        retried_ok = [k for k, v in inj.served.items() if v[-1] == "ok" and len(v) > 1]
        exp_dialogue = sorted(f"{k[0]}:{kind}" for k, kind in final.items() if k[0] in ("student", "tutor"))
        exp_judge = sum(1 for k in final if k[0] == "judge")
        assert exp_dialogue and exp_judge and retried_ok, "the seed must inject all three cases"
        # The attempt cap: identical requests of a turn are sent once, and a distinct
        # request at most (1 + EduFair's retries) x lm-eval's max_retries (2 here) times for the
        # tutor and student, 1 + max_retries for the judge; even the opening student message,
        # identical at all 9 levels, never goes past it.
        cap = {"student": (1 + DIALOGUE_RETRIES) * 2, "tutor": (1 + DIALOGUE_RETRIES) * 2, "judge": 1 + judge["max_retries"]}
        over = {k[0]: len(v) for k, v in inj.served.items() if k[0] in cap and len(v) > cap[k[0]]}
        assert not over, over
        # empty answers are retried like any failure: a transient one is never final
        transient_empty = [k for k, v in inj.served.items() if v[0] == "empty_output" and v[-1] == "ok"]
        persistent_empty = [k for k, v in inj.served.items() if v[-1] == "empty_output"]
        assert transient_empty or persistent_empty, "the seed must inject empty answers"
        assert all(1 < len(inj.served[k]) <= 1 + DIALOGUE_RETRIES for k in persistent_empty)

        recs = samples(out)
        got_dialogue = sorted(
            t["stop_reason"].split("_")[0] + ":" + t["error_kind"]
            for t in (r_["transcript"] for r_ in recs) if t["stop_reason"] in ("student_failed", "tutor_failed")
        )
        assert got_dialogue == exp_dialogue
        res = results(out)
        assert res["failed_dialogues,judged"] == len(exp_dialogue)
        # the end-of-run summary names each kind, per condition level, and the totals add up
        summary = [ln for ln in r.stderr.splitlines() if "failed dialogues [" in ln]
        counted = sum(int(n) for ln in summary for n in re.findall(r"=(\d+)", ln.split("failed dialogues")[1]))
        assert counted == len(exp_dialogue) and all(ln.strip().startswith("explicit/") for ln in summary)

        judged = [j for r_ in recs for j in r_["judgements"]]
        missing = [j for j in judged if j["status"] == "missing"]
        assert len(missing) == exp_judge
        assert res["missing_label_rate,judged"] == pytest.approx(exp_judge / len(judged))
        for j in missing:  # never replaced by a value
            assert not j.get("labels") and j.get("reason")
        for r_ in recs:
            if r_["judgements"] and all(j["status"] == "missing" for j in r_["judgements"]):
                for m in ("mistake_recognize", "answer_leakage", "step_scaffolded", "actionability", "corrective_tone"):
                    assert r_["scores"]["scores"].get(m) is None

        # Faults off: the rerun re-sends only what had not succeeded.
        answered = {k for k, v in inj.served.items() if "ok" in v and k[0] != "harness"}
        inj.served.clear()
        inj.on = False
        out2 = tmp_path / "out2"
        r = run_cli(lm_eval_argv(fake.url, bank, out2, judge=judge, model_args_extra="timeout=2"), cli_env(cache), tmp_path, timeout=240)
        assert r.returncode == 0, r.stderr[-3000:]
        resent = [k for k in inj.served if k in answered]
        assert not resent, f"{len(resent)} successful calls sent again"
        assert {k for k in final if k[0] == "judge"} <= set(inj.served) or exp_judge == 0
        res2 = results(out2)
        assert res2["failed_dialogues,judged"] == 0 and res2["missing_label_rate,judged"] == 0
        assert all(j["status"] == "ok" for r_ in samples(out2) for j in r_["judgements"])
