"""Bank sizes and SciQ readings: the gold-in-question filter, per-domain
caps (SocraTeach uncapped), the SciQ pipeline variants and their options, split loading, and the
report label of the GSM8K proxy."""

from __future__ import annotations

import copy
import json
import sys
import zipfile

import pytest

from edufair_metrics import cli
from edufair_metrics.bank import DATA_DIR, domain_label, load_bank, sciq
from edufair_metrics.bank import socrateach as st
from edufair_metrics.bank.build import build_bank, parse_caps, resolve_caps
from edufair_metrics.bank.common import DEFAULT_CAPS, seeded_sample
from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.matching import mentions_answer
from tests.helpers.paths import FIXTURES

SOCRATEACH_FIXTURE = FIXTURES / "socrateach_multi.json"

# ---------------------------------------------------------------- synthetic SciQ

_VOCAB = {
    "physics": "force motion velocity acceleration gravity push pull friction inertia",
    "chemistry": "molecule reaction acid solution atom bond ion electron compound salt",
    "biology": "cell dna organism species gene protein tissue enzyme membrane virus",
}
_QUESTIONS = {
    "physics": ("How does a push of size {i} change the motion of cart {i}?", "it speeds up {i}"),
    "chemistry": ("Which bond forms in reaction number {i}?", "ionic bond {i}"),
    "biology": ("Which tissue grows in organism number {i}?", "muscle {i}"),
}


def _row(question: str, answer: str, support: str) -> dict:
    return {"question": question, "correct_answer": answer, "support": support,
            "distractor1": "a", "distractor2": "b", "distractor3": "c"}


def synthetic_rows(n: int = 30) -> list[dict]:
    """``n`` clearly separable questions per domain (physics, chemistry, biology interleaved)."""
    rows = []
    for i in range(n):
        for domain, (q, a) in _QUESTIONS.items():
            rows.append(_row(q.format(i=i), a.format(i=i), f"{_VOCAB[domain]} item {i}"))
    return rows


def _source(rows: list[dict], split: str = "train") -> sciq.SciqSource:
    return sciq.SciqSource([sciq.SciqRow(split, i, r) for i, r in enumerate(rows)], "synthetic", None)


# ---------------------------------------------------------------- gold occurs in the question


@pytest.mark.parametrize("question, answer, domain, expected", [
    ("Do most substances increase or decrease in size when they freeze?", "decrease", "chemistry", True),
    ("Is the heat of reaction positive or negative for an endothermic reaction?", "positive", "chemistry", True),
    ("Are scissors simple or compound machines?", "compound", "physics", True),
    ("Do metals tend to gain electrons or lose electrons?", "lose electrons", "chemistry", True),
    ("The properties of liquids lie between gases and solids but are closer to?", "solid", "physics", True),  # plural
    ("What force pulls objects toward Earth?", "gravity", "physics", False),
    ("Which particle carries a negative charge?", "electron", "chemistry", False),
    ("What happens to the volume of a gas when it is heated?", "it increases", "chemistry", False),
])
def test_gold_in_question(question, answer, domain, expected):
    assert sciq.gold_in_question(question, answer, domain) is expected


def test_build_drops_items_whose_gold_is_in_the_question_and_counts_the_step():
    rows = synthetic_rows()
    # three physics and two chemistry questions name their own gold
    leaks = {0: ("Does a push make cart 0 speed up or slow down?", "speed up"),
             3: ("Does a larger push give cart 1 more or less motion?", "more"),
             6: ("Is the push on cart 2 balanced or unbalanced?", "unbalanced"),
             1: ("Is the salt in reaction 0 ionic or covalent?", "ionic"),
             4: ("Does reaction 1 release or absorb heat?", "release")}
    for idx, (q, a) in leaks.items():
        rows[idx] = {**rows[idx], "question": q, "correct_answer": a}
    result = sciq.build_sciq(_source(rows), None, 0, options=sciq.SciqOptions())
    s = result.stats
    assert s["kept_by_confidence"] == {"physics": 30, "chemistry": 30}
    assert s["answer_not_in_question"] == {"physics": 27, "chemistry": 28}
    assert s["sampled"] == {"physics": 27, "chemistry": 28}
    for domain, items in result.items.items():
        assert not any(mentions_answer(it.question, it.answer_forms, domain) for it in items)
    # the step sits after the confidence filter, before sampling, in the funnel's key order
    keys = list(s)
    assert keys.index("kept_by_confidence") < keys.index("answer_not_in_question") < keys.index("sampled")


@pytest.mark.parametrize("domain", ["physics", "chemistry"])
def test_no_shipped_item_contains_its_gold_in_its_question(domain):
    items = load_bank(domain)
    leaking = [it.id for it in items if mentions_answer(it.question, it.answer_forms, domain)]
    assert leaking == []


def test_repeated_question_is_kept_once_without_early_dedup():
    rows = synthetic_rows()
    rows.append(dict(rows[0]))  # an exact repeat (SciQ has a few, also across splits)
    result = sciq.build_sciq(_source(rows), None, 0, options=sciq.SciqOptions(dedup=False))
    assert "after_dedup" not in result.stats
    assert result.stats["kept_by_confidence"]["physics"] == 31
    assert result.stats["distinct"]["physics"] == result.stats["sampled"]["physics"] == 30
    ids = [it.id for it in result.items["physics"]]
    assert len(ids) == len(set(ids))


# ---------------------------------------------------------------- keyword readings


def test_keyword_match_modes():
    text = "Gravitational forces act; the molecules move."
    assert sciq.keyword_hits(text, "word") == {"physics": 0, "chemistry": 0, "biology": 0}
    assert sciq.keyword_hits(text, "word_plural") == {"physics": 1, "chemistry": 1, "biology": 0}
    assert sciq.keyword_hits(text, "substring") == {"physics": 1, "chemistry": 1, "biology": 0}
    assert sciq.keyword_hits("Cellular acidity and excellent motions", "substring") == {
        "physics": 1, "chemistry": 1, "biology": 2}
    assert sciq.keyword_hits("Cellular acidity and excellent motions", "word_plural") == {
        "physics": 1, "chemistry": 0, "biology": 0}


@pytest.mark.parametrize("rule, expected", [
    ("most_hits_tie_excluded", [None, "chemistry", None]),
    ("most_hits_tie_first_listed", ["physics", "chemistry", None]),
    ("first_listed_with_hit", ["physics", "physics", None]),
])
def test_weak_label_rules_per_variant(rule, expected):
    opts = sciq.SciqOptions(weak_label_rule=rule)
    texts = ["A force on a molecule", "The force starts a reaction in a solution", "The sun rises"]
    assert [sciq.weak_label(t, opts) for t in texts] == expected


def test_keyword_text_question_only_ignores_the_support():
    row = _row("Which bond forms here?", "ionic", "force velocity gravity")
    assert sciq.weak_label(sciq.keyword_text(row, sciq.SciqOptions()), sciq.SciqOptions()) == "physics"
    q_only = sciq.SciqOptions(keyword_text="question")
    assert sciq.weak_label(sciq.keyword_text(row, q_only), q_only) is None


def test_options_and_variant_names_are_validated():
    with pytest.raises(EduFairError, match="splits"):
        sciq.SciqOptions(splits=("train", "dev"))
    with pytest.raises(EduFairError, match="keyword_match"):
        sciq.SciqOptions(keyword_match="fuzzy")
    with pytest.raises(EduFairError, match="weak_label_rule"):
        sciq.SciqOptions(weak_label_rule="vote")
    with pytest.raises(EduFairError, match="unknown SciQ variant 'nope'"):
        sciq.variant_options("nope")
    assert sciq.DEFAULT_VARIANT in sciq.VARIANTS
    assert all(desc for _, desc in sciq.VARIANTS.values())


def test_variant_recorded_in_parameters():
    params = sciq.parameters(500, 0, "train-literal")
    assert params["variant"] == "train-literal" and params["cap"] == 500
    assert params["options"]["keyword_match"] == "substring" and params["split"] == "train"
    assert params["dedup"] == "none"


def test_source_with_splits_the_variant_does_not_read_is_an_error():
    src = _source(synthetic_rows(), split="test")
    with pytest.raises(EduFairError, match="splits"):
        sciq.build_sciq(src, None, 0, options=sciq.SciqOptions(splits=("train",)))


# ---------------------------------------------------------------- split loading


def _write_zip(path, splits):
    with zipfile.ZipFile(path, "w") as zf:
        for split, rows in splits.items():
            zf.writestr(f"SciQ dataset-2 3/{split}.json", json.dumps(rows))
            zf.writestr(f"__MACOSX/SciQ dataset-2 3/._{split}.json", "junk")


def test_load_several_splits_from_zip_and_folder(tmp_path):
    rows = synthetic_rows(2)
    splits = {"train": rows[:3], "valid": rows[3:5], "test": rows[5:]}
    z = tmp_path / "SciQ.zip"
    _write_zip(z, splits)
    src = sciq.load_sciq(z, sciq.SPLITS)
    assert [(r.split, r.index) for r in src.rows] == [
        ("train", 0), ("train", 1), ("train", 2), ("valid", 0), ("valid", 1), ("test", 0)]
    assert len(sciq.load_sciq_train(z).rows) == 3
    folder = tmp_path / "x" / "SciQ dataset-2 3"
    folder.mkdir(parents=True)
    for split, part in splits.items():
        (folder / f"{split}.json").write_text(json.dumps(part))
    from_folder = sciq.load_sciq(tmp_path / "x", sciq.SPLITS)
    assert [r.fields for r in from_folder.rows] == [r.fields for r in src.rows]
    assert from_folder.sha256 and len(from_folder.sha256) == 64
    with pytest.raises(EduFairError, match="one file"):
        sciq.load_sciq(folder / "train.json", sciq.SPLITS)
    _write_zip(tmp_path / "train_only.zip", {"train": rows})
    with pytest.raises(EduFairError, match="no valid.json inside the zip"):
        sciq.load_sciq(tmp_path / "train_only.zip", sciq.SPLITS)


# ---------------------------------------------------------------- caps


def test_parse_caps():
    assert parse_caps(["physics=500", "math=all", "chemistry=none", "chemistry=20"]) == {
        "physics": 500, "mathematics": None, "chemistry": 20}
    assert parse_caps(None) == {}
    for bad in ("physics", "physics=", "physics=-1", "physics=1.5", "biology=3", "=4"):
        with pytest.raises(EduFairError):
            parse_caps([bad])


def test_default_caps_follow_the_source():
    domains = ["mathematics", "physics", "chemistry"]
    assert resolve_caps(domains, socrateach=True) == {"mathematics": None, "physics": 500, "chemistry": 500}
    assert resolve_caps(domains, socrateach=False)["mathematics"] == DEFAULT_CAPS["gsm8k-proxy"]
    # --per-domain sets every domain, an explicit --cap wins over it
    assert resolve_caps(domains, True, per_domain=50) == {"mathematics": 50, "physics": 50, "chemistry": 50}
    assert resolve_caps(domains, True, {"physics": 7, "mathematics": None}, per_domain=50) == {
        "mathematics": None, "physics": 7, "chemistry": 50}
    with pytest.raises(EduFairError, match="cap"):
        resolve_caps(domains, True, {"physics": -2})


def test_seeded_sample_without_a_cap_keeps_everything_in_order():
    assert seeded_sample(list(range(900)), None, 0) == list(range(900))
    assert len(seeded_sample(list(range(900)), 500, 0)) == 500
    with pytest.raises(EduFairError):
        seeded_sample([1, 2], -1, 0)


def _large_socrateach(tmp_path, n: int):
    """``n`` copies of the fixture's passing problem, each with its own question and answer."""
    base = json.loads(SOCRATEACH_FIXTURE.read_text())["GSM8K_train_1"]
    problems = {}
    for i in range(n):
        p = copy.deepcopy(base)
        gold = 1000 + i  # never equal to a number the turns mention
        p["question"] = base["question"].replace("Tom", f"Tom #{i}")
        p["answer"] = str(gold)
        for turns in p["dialogues"].values():
            for t in turns:
                for key in ("system", "user"):
                    if key in t:
                        t[key] = t[key].replace("14", str(gold))
        p["dialogues"] = {f"GSM8K_train_{i}_{k}": v for k, v in enumerate(base["dialogues"].values())}
        problems[f"GSM8K_train_{i}"] = p
    path = tmp_path / "SocraTeach_multi.json"
    path.write_text(json.dumps(problems))
    return path


def test_socrateach_keeps_every_qualifying_problem_beyond_500(tmp_path):
    path = _large_socrateach(tmp_path, 620)
    problems, _, _ = st.load_socrateach(path)
    assert st.build_socrateach(problems, None, 0).stats["problems_kept"] == 620
    manifest = build_bank(tmp_path / "out", domains=["mathematics"], socrateach_path=path)
    entry = manifest["files"]["mathematics.jsonl"]
    assert entry["count"] == 620 and entry["parameters"]["cap"] is None
    assert entry["counts"]["problems_kept"] == entry["counts"]["sampled"] == 620
    assert len(load_bank("mathematics", tmp_path / "out")) == 620
    # an explicit cap still applies
    capped = build_bank(tmp_path / "capped", domains=["mathematics"], socrateach_path=path, caps={"mathematics": 500})
    assert capped["files"]["mathematics.jsonl"]["count"] == 500


def test_cli_cap_flags(tmp_path, capsys, monkeypatch):
    path = _large_socrateach(tmp_path, 12)
    monkeypatch.setattr(sys, "argv", ["edufair"])
    rc = cli.main(["build-bank", "--domains", "math", "--socrateach", str(path), "--out", str(tmp_path / "a")])
    assert rc == 0 and len(load_bank("mathematics", tmp_path / "a")) == 12
    rc = cli.main(["build-bank", "--domains", "math", "--socrateach", str(path), "--out", str(tmp_path / "b"),
                   "--per-domain", "3", "--cap", "mathematics=5"])
    assert rc == 0 and len(load_bank("mathematics", tmp_path / "b")) == 5
    rc = cli.main(["build-bank", "--domains", "math", "--socrateach", str(path), "--out", str(tmp_path / "c"),
                   "--cap", "math=lots"])
    err = capsys.readouterr().err
    assert rc == 2 and "--cap 'math=lots'" in err


# ---------------------------------------------------------------- GSM8K proxy label


def test_domain_label():
    assert domain_label("mathematics", "gsm8k-proxy") == "mathematics (GSM8K proxy)"
    assert domain_label("mathematics", "socrateach") == "mathematics"
    assert domain_label("physics", "sciq") == "physics"
    assert domain_label("chemistry", None) == "chemistry"


def test_shipped_math_items_and_manifest_agree_on_the_source():
    manifest = json.loads((DATA_DIR / "manifest.json").read_text())
    entry = manifest["files"]["mathematics.jsonl"]
    assert {it.source for it in load_bank("mathematics")} == {entry["source"]}
