"""The placebo replicate: one level run again with independent tutor sampling;
the paired |r| between two runs of the same condition is the empirical noise floor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from edufair_metrics.analysis.placebo import placebo_floor, placebo_summary
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.placebo import PLACEBO_SEED_BASE, PlaceboReplicate, replicate_level, split_replicate_level
from edufair_metrics.protocol import expand_documents
from edufair_metrics.records import BankItem
from edufair_metrics.settings import resolve_runner_settings


def _docs(n_questions=3, condition="explicit"):
    items = [BankItem(f"q{i}", "physics", 8, f"Q{i}?", "gravity", ["gravity"], "sciq") for i in range(n_questions)]
    return expand_documents(items, condition)


def test_expand_adds_replicates_after_each_question_with_own_seed():
    docs = _docs()
    out = PlaceboReplicate(level="female", replicates=3).expand(docs)
    assert len(out) == len(docs) + 3 * 2  # replicates 2 and 3 for each of 3 questions
    # question-major: each question's replicates follow its last normal document
    assert [d["question_id"] for d in out] == sorted([d["question_id"] for d in out], key=lambda q: int(q[1:]))
    reps = [d for d in out if d["replicate"] > 1]
    assert {d["level"] for d in reps} == {"female~replicate2", "female~replicate3"}
    assert {d["tutor_gen_kwargs"]["seed"] for d in reps} == {PLACEBO_SEED_BASE + 2, PLACEBO_SEED_BASE + 3}
    base = next(d for d in out if d["level"] == "female" and d["question_id"] == "q0")
    rep = next(d for d in reps if d["question_id"] == "q0" and d["replicate"] == 2)
    # identical prompts: only sampling differs
    assert (rep["tutor_system"], rep["student_system"], rep["dimension"]) == (base["tutor_system"], base["student_system"], "gender")
    assert base["replicate"] == 1 and base["tutor_gen_kwargs"] is None
    assert all(set(d) == set(out[0]) for d in out)  # one schema for datasets.Dataset.from_list


def test_level_names_round_trip():
    assert split_replicate_level(replicate_level("ji_yoon", 2)) == ("ji_yoon", 2)
    assert split_replicate_level("ji_yoon") == ("ji_yoon", 1) and replicate_level("male", 1) == "male"


@pytest.mark.parametrize("value, msg", [
    ({"level": "female", "replicates": 1}, "replicates"), ({"replicates": 2}, "level"),
    ({"level": "female", "copies": 2}, "unknown"), ("female", "mapping"),
])
def test_bad_placebo_settings_are_one_line_errors(value, msg):
    base = {"max_tutor_turns": 3, "student": {"model": "local-chat-completions"}}
    with pytest.raises(EduFairError, match=msg) as ei:
        resolve_runner_settings(base, {"edufair": {"placebo": value}})
    assert "\n" not in str(ei.value)


def test_unknown_placebo_level_names_the_known_levels():
    with pytest.raises(EduFairError, match="not a level of this task.*female"):
        PlaceboReplicate(level="martian").expand(_docs())


def _long(rows):
    return pd.DataFrame(rows, columns=["tutor", "task", "domain", "condition", "dimension", "level", "question_id",
                                       "metric", "value"])


def _frame(shift=0.0, noise=0.0, n=200, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n):
        base = rng.random()
        for level, v in (("female", base), ("female~replicate2", base + shift + noise * rng.normal())):
            rows.append(("t", "edufair_explicit_physics", "physics", "explicit", "gender", level, f"q{q}", "answer_leakage", v))
            rows.append(("t", "edufair_explicit_physics", "physics", "explicit", "gender", level, f"q{q}", "tutor_turns", v * 10))
    return _long(rows)


def test_identical_replicates_have_zero_floor_and_noise_gives_a_floor():
    same = placebo_floor(_frame(), n_boot=200)
    assert len(same) == 2 and set(same["replicate"]) == {2} and (same["n_pairs"] == 200).all()
    assert (same["abs_r"] == 0).all() and (same["null_abs_r"] == 0).all()  # every difference is zero
    noisy = placebo_floor(_frame(noise=0.3), n_boot=200)
    assert (noisy["abs_r"] < 0.2).all() and (noisy["null_abs_r"] > 0).all()
    shifted = placebo_floor(_frame(shift=-0.2, noise=0.05), n_boot=200)
    assert (shifted["r"] > 0.9).all()  # replicate 1 - replicate 2 > 0: a drift between runs is visible
    summary = placebo_summary(noisy)
    assert set(summary["kind"]) == {"pedagogical", "conversation"} and (summary["contrasts"] == 1).all()


def test_no_replicate_no_rows():
    df = _frame()
    assert placebo_floor(df[df["level"] == "female"]).empty


def test_placebo_run_through_lm_eval_samples_the_replicate_with_its_own_seed(bank_dir):
    """End to end (simple_evaluate): the replicate's tutor calls carry their own seed, so neither
    the cache nor request coalescing can hand replicate 2 the turns of replicate 1."""
    from tests.helpers.fake_lms import ScriptedChatLM
    from tests.helpers.fake_lms import run_task as run

    class SeededTutor(ScriptedChatLM):
        def generate_until(self, requests, disable_tqdm=False):
            import json as _json

            self.calls.append([_json.loads(r.args[0].prompt) for r in requests])
            self.gen_kwargs.append(dict(requests[0].args[1]) if requests else {})
            return [f"Think again (seed {r.args[1].get('seed', 'engine')}). What force acts?" for r in requests]

    tutor = SeededTutor()
    results = run(tutor, bank_dir, max_turns=1, extra={"placebo": {"level": "female", "replicates": 2}})
    recs = [s["complete_dialogues"] for s in results["samples"]["edufair_explicit_physics"]]
    assert len(recs) == 2 * (9 + 1)
    by_level = {(r["transcript"]["question_id"], r["transcript"]["level"]): r for r in recs}
    base = by_level[("phys-q1", "female")]["transcript"]["turns"][2]["text"]
    rep = by_level[("phys-q1", "female~replicate2")]["transcript"]["turns"][2]["text"]
    assert "seed engine" in base and f"seed {PLACEBO_SEED_BASE + 2}" in rep
    assert sorted(len(c) for c in tutor.calls) == [2, 18]  # one batched call per decoding setting
    # identical prompts: only the sampling seed differs
    assert (by_level[("phys-q1", "female")]["transcript"]["tutor_system"]
            == by_level[("phys-q1", "female~replicate2")]["transcript"]["tutor_system"])
    again = SeededTutor()
    run(again, bank_dir, max_turns=1, extra={"placebo": {"level": "female", "replicates": 2}})
    assert again.calls == []  # both replicates served from the cache, each under its own key


# ---- the placebo as an exchangeability check --------------------------------------------------------


def _check_frame(n=150, *, shift=0.0, zero_share=0.0, seed=0, tutor="t"):
    from tests.analysis.sim_threats import placebo_frame

    return placebo_frame(np.random.default_rng(seed), n, shift=shift, zero_share=zero_share).assign(tutor=tutor)


def test_placebo_rows_read_against_their_own_floor():
    floor = placebo_floor(_check_frame(), n_boot=200)
    assert len(floor) == 9 and (floor["excess_abs_r"] == floor["abs_r"] - floor["null_abs_r"]).all()
    assert floor["p_perm"].between(0, 1).all() and (floor["flagged"] == (floor["p_decide"] < 0.05)).all()


def test_exchangeable_replicates_pass_and_a_drifting_replicate_fails():
    from edufair_metrics.analysis.placebo import exchangeability_check

    ok = exchangeability_check(_check_frame(), n_boot=400).iloc[0]
    assert not ok["failed"] and ok["excess_null_low"] < ok["excess"] < ok["excess_null_high"]
    assert ok["excess_ci_low"] < 0 < ok["excess_ci_high"]
    assert 0.3 < ok["mean_p"] < 0.7 and ok["flag_rate_null"] <= 0.05 and ok["rows"] == 9
    assert ok["mean_p_null_low"] < 0.5 < ok["mean_p_null_high"]
    bad = exchangeability_check(_check_frame(shift=0.08), n_boot=400).iloc[0]
    assert bad["failed"] and bad["p_exch"] < 0.01 and bad["excess"] > bad["excess_null_high"]
    assert bad["flag_rate"] > bad["flag_rate_null_high"] and bad["mean_p"] < bad["mean_p_null_low"]


def test_the_check_reads_a_high_zero_share_against_its_own_floor():
    """60% identical replicate dialogues raise the placebo's floor (the issue's 0.110 against 0.076),
    not its excess: exchangeable replicates still pass."""
    from edufair_metrics.analysis.placebo import exchangeability_check

    plain = exchangeability_check(_check_frame(seed=1), n_boot=400).iloc[0]
    zeros = exchangeability_check(_check_frame(seed=1, zero_share=0.6), n_boot=400).iloc[0]
    assert zeros["floor"] > plain["floor"] + 0.02 and not zeros["failed"] and not plain["failed"]


def test_the_decision_is_bonferroni_over_the_tutors_with_a_replicate():
    from edufair_metrics.analysis.placebo import exchangeability_check

    two = pd.concat([_check_frame(tutor="a", seed=2), _check_frame(tutor="b", seed=3, shift=0.1)], ignore_index=True)
    check = exchangeability_check(two, n_boot=200).set_index("tutor")
    assert (check["alpha"] == 0.025).all() and not check.loc["a", "failed"] and check.loc["b", "failed"]
    assert exchangeability_check(_check_frame().query("level == 'female'")).empty
