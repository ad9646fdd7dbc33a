"""Question bank: shipped files, byte-identical rebuilds, filters, loader validation, CLI errors."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from edufair_metrics import cli
from edufair_metrics.protocol.matching import mentions_answer, normalize_answer
from edufair_metrics.bank import load_bank
from edufair_metrics.bank import gsm8k, sciq
from edufair_metrics.bank.build import build_bank
from edufair_metrics.bank.common import DEFAULT_CAPS
from edufair_metrics.errors import EduFairError
from edufair_metrics.records import DOMAINS, GRADES
from lm_eval_tasks import DATA_DIR
from tests.helpers import paths

SHARED = paths.SHARED / "data"  # ../shared beside the checkout, or $EDUFAIR_SHARED_DIR
SCIQ_ZIP = SHARED / "sciq" / "SciQ.zip"
GSM8K_DIR = SHARED / "gsm8k"

needs_sciq = pytest.mark.skipif(
    not SCIQ_ZIP.is_file(), reason=f"SciQ release not found at {SCIQ_ZIP} (clone with shared/ beside the repo)"
)
needs_gsm8k = pytest.mark.skipif(
    not (GSM8K_DIR / "train.jsonl").is_file(), reason=f"GSM8K not found at {GSM8K_DIR} (clone with shared/ beside the repo)"
)


def _manifest() -> dict:
    return json.loads((DATA_DIR / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    """The whole bank rebuilt from ../shared into a temp folder (once per module)."""
    if not (SCIQ_ZIP.is_file() and (GSM8K_DIR / "train.jsonl").is_file()):
        pytest.skip(f"shared corpora not found under {SHARED}")
    out = tmp_path_factory.mktemp("bank")
    build_bank(out, sciq_path=SCIQ_ZIP, gsm8k_path=GSM8K_DIR)
    return out


# ---------------------------------------------------------------- shipped bank


@pytest.mark.parametrize("domain", DOMAINS)
def test_shipped_bank_loads_and_matches_manifest(domain):
    items = load_bank(domain)
    entry = _manifest()["files"][f"{domain}.jsonl"]
    raw = (DATA_DIR / f"{domain}.jsonl").read_bytes()
    assert entry["count"] == len(items) > 0
    assert entry["sha256"] == hashlib.sha256(raw).hexdigest()
    cap = DEFAULT_CAPS[entry["source"]]
    assert entry["seed"] == 0 and entry["parameters"]["cap"] == cap
    assert cap is None or len(items) <= cap
    assert len({it.id for it in items}) == len(items)
    assert all(it.domain == domain and it.grade == GRADES[domain] for it in items)
    assert all(it.id.startswith(f"{domain}-{it.source}-") for it in items)
    assert (DATA_DIR / entry["license"]["file"]).is_file()
    # the gold must be detectable by the deterministic matcher in its own answer forms
    assert all(mentions_answer(it.answer, it.answer_forms, domain) for it in items)


def test_shipped_lines_have_sorted_keys():
    for domain in DOMAINS:
        for line in (DATA_DIR / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            assert line == json.dumps(obj, ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize("domain", ["physics", "chemistry"])
def test_shipped_sciq_items_respect_filters(domain):
    items = load_bank(domain)
    assert all(it.source == "sciq" for it in items)
    for it in items:
        assert not it.question.lower().startswith(("what is", "what are"))
        assert it.meta["support"].strip()
        assert it.meta["label_confidence"] >= 0.65
        assert it.answer_forms == [normalize_answer(it.answer)]
        assert it.meta["support"] not in it.question  # the passage is never shown to the student


def test_shipped_math_is_gsm8k_proxy_with_multistep_solutions():
    items = load_bank("mathematics")
    entry = _manifest()["files"]["mathematics.jsonl"]
    # the proxy has the paper's SocraTeach size (907; its 30% API subsample is the paper's 272)
    assert entry["source"] == "gsm8k-proxy" and len(items) == DEFAULT_CAPS["gsm8k-proxy"] == 907
    assert entry["counts"]["answer_not_in_question"] > 907  # a real cap, not the whole pool
    for it in items:
        assert it.source == "gsm8k-proxy"
        calc, lines = gsm8k.solution_steps(it.meta["solution"])
        assert calc >= gsm8k.MIN_CALC_STEPS and lines >= gsm8k.MIN_SOLUTION_LINES
        assert (calc, lines) == (it.meta["calc_steps"], it.meta["solution_lines"])
        final = it.meta["solution"].split("####")[-1].strip().replace(",", "")
        assert it.answer == final
        assert it.answer_forms[0] == it.answer
        assert not mentions_answer(it.question, it.answer_forms, "mathematics")


def test_licences_are_verbatim_copies():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not found")
    assert (DATA_DIR / "LICENSE-SciQ.txt").read_bytes() == (SHARED / "sciq" / "license.txt").read_bytes()
    assert (DATA_DIR / "LICENSE-GSM8K.txt").read_bytes() == (SHARED / "gsm8k" / "LICENSE").read_bytes()


# ---------------------------------------------------------------- byte-identical rebuilds


@needs_sciq
@needs_gsm8k
@pytest.mark.parametrize(
    "name",
    ["physics.jsonl", "chemistry.jsonl", "mathematics.jsonl", "manifest.json", "README.md", "LICENSE-SciQ.txt",
     "LICENSE-GSM8K.txt", "sciq_variants.json"],
)
@pytest.mark.slow
def test_rebuild_equals_shipped_byte_for_byte(rebuilt, name):
    same = (rebuilt / name).read_bytes() == (DATA_DIR / name).read_bytes()
    if not same and name != "mathematics.jsonl":
        # The SciQ domain classifier (TF-IDF + logistic regression) is the one floating-point step
        # of the build. Where this machine's numeric stack makes it predict other domains than the
        # machine that built the shipped bank, a byte comparison of its outputs says nothing about
        # the builder's code: say so and skip (the rest of the bank is still compared).
        shipped = json.loads((DATA_DIR / "manifest.json").read_text())["files"]["physics.jsonl"]["counts"]
        here = json.loads((rebuilt / "manifest.json").read_text())["files"]["physics.jsonl"]["counts"]
        if shipped.get("predicted") != here.get("predicted"):
            import platform

            pytest.skip(f"the SciQ domain classifier predicts other domains on this machine "
                        f"({platform.processor() or platform.machine()}): {here.get('predicted')} vs the shipped "
                        f"{shipped.get('predicted')}; the shipped bank is not reproducible here byte for byte")
    assert same, f"{name} differs from the shipped copy"


@pytest.mark.slow
@needs_sciq
def test_sciq_extracted_folder_gives_same_items(tmp_path, rebuilt):
    with zipfile.ZipFile(SCIQ_ZIP) as zf:
        zf.extractall(tmp_path / "sciq")
    out = tmp_path / "out"
    build_bank(out, domains=["physics", "chemistry"], sciq_path=tmp_path / "sciq")
    for name in ("physics.jsonl", "chemistry.jsonl"):
        assert (out / name).read_bytes() == (rebuilt / name).read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"]["physics.jsonl"]["source_file"] == "sciq"  # the folder: several split files
    assert "mathematics.jsonl" not in manifest["files"]  # only the requested domains


@pytest.mark.slow
@needs_sciq
def test_sciq_pipeline_counts(rebuilt):
    entry = json.loads((rebuilt / "manifest.json").read_text())["files"]["physics.jsonl"]
    counts = entry["counts"]
    # the shipped reading loads the whole release; the train split is §3.1.2's 11,679
    assert entry["parameters"]["variant"] == sciq.DEFAULT_VARIANT
    assert counts["pool_by_split"] == {"train": 11679, "valid": 1000, "test": 1000}
    assert counts["pool"] == 13679
    assert counts["after_empty_support"] == 10481 + 887 + 884  # SciQ readme: items with support
    assert counts["after_definitional"] < counts["after_empty_support"]
    for d in ("physics", "chemistry"):
        assert counts["distinct"][d] <= counts["answer_not_in_question"][d] <= counts["kept_by_confidence"][d]
        assert counts["sampled"][d] == min(500, counts["distinct"][d])
    assert counts["kept_by_confidence"]["physics"] >= 500  # the paper's physics count (150 = 30%)


@pytest.mark.slow
@needs_sciq
def test_shipped_variant_comparison_is_reproducible(tmp_path):
    """``sciq_variants.json`` (what the bank README reports) is what the builder computes today."""
    from edufair_metrics.bank.build import compare_sciq

    shipped = json.loads((DATA_DIR / "sciq_variants.json").read_text(encoding="utf-8"))
    fresh = compare_sciq(SCIQ_ZIP, shipped["caps"], shipped["seed"], shipped["shipped"], lambda _m: None)
    here = fresh["variants"][shipped["shipped"]]["counts"]["predicted"]
    built = shipped["variants"][shipped["shipped"]]["counts"]["predicted"]
    if here != built:  # the classifier's floating point: see test_rebuild_equals_shipped_byte_for_byte
        pytest.skip(f"the SciQ domain classifier predicts other domains on this machine: {here} vs the shipped "
                    f"{built}; the variant comparison is not reproducible here")
    assert json.loads(json.dumps(fresh)) == shipped
    assert set(shipped["variants"]) == set(sciq.VARIANTS) and shipped["shipped"] == sciq.DEFAULT_VARIANT


@pytest.mark.slow
@needs_sciq
def test_different_seed_changes_the_sample(tmp_path, rebuilt):
    build_bank(tmp_path, domains=["chemistry"], sciq_path=SCIQ_ZIP, seed=1)
    assert (tmp_path / "chemistry.jsonl").read_bytes() != (rebuilt / "chemistry.jsonl").read_bytes()


def test_rebuild_one_domain_keeps_other_manifest_entries(tmp_path):
    if not (GSM8K_DIR / "train.jsonl").is_file():
        pytest.skip(f"GSM8K not found at {GSM8K_DIR}")
    shutil.copy(DATA_DIR / "manifest.json", tmp_path / "manifest.json")
    build_bank(tmp_path, domains=["mathematics"], gsm8k_path=GSM8K_DIR, per_domain=20)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["files"]["mathematics.jsonl"]["count"] == 20
    assert manifest["files"]["mathematics.jsonl"]["parameters"]["cap"] == 20
    assert manifest["files"]["physics.jsonl"] == _manifest()["files"]["physics.jsonl"]


# ---------------------------------------------------------------- SciQ units


def test_weak_label_rules():
    v1 = sciq.variant_options("v1-first-builder")
    assert sciq.weak_label("The net force changes its velocity.", v1) == "physics"
    assert sciq.weak_label("An acid-base reaction forms molecules", v1) == "chemistry"
    assert sciq.weak_label("Cells contain DNA", v1) == "biology"
    assert sciq.weak_label("Forces and molecules", v1) is None  # tie -> excluded from training
    assert sciq.weak_label("The sun rises in the east", v1) is None  # no keyword
    assert sciq.weak_label("cellular excellence", v1) is None  # whole words only
    # the shipped reading (App. E's plain heuristic): substrings, first listed domain with a hit
    assert sciq.weak_label("Forces and molecules") == "physics"
    assert sciq.weak_label("cellular excellence") == "biology"
    assert sciq.weak_label("The sun rises in the east") is None


def test_definitional_filter():
    assert sciq.is_definitional("What is the unit of force?")
    assert sciq.is_definitional("  WHAT ARE  ions?")
    assert not sciq.is_definitional("What happens to ice when heated?")
    assert not sciq.is_definitional("Which is faster?")


def test_sciq_malformed_json_names_file_and_line(tmp_path):
    bad = tmp_path / "train.json"
    bad.write_text('[\n{"question": "q"},\n{oops}\n]\n')
    with pytest.raises(EduFairError, match=r"train\.json:3:\d+: malformed JSON"):
        sciq.load_sciq_train(tmp_path)


# ---------------------------------------------------------------- GSM8K units


def test_gsm8k_multistep_criterion():
    sol4 = "a <<1+1=2>>2\nb <<2+1=3>>3\nc <<3+1=4>>4\nd <<4+1=5>>5\n#### 5"
    assert gsm8k.solution_steps(sol4) == (4, 4)
    assert gsm8k.is_multistep(sol4)
    sol3 = "a <<1+1=2>>2\nb <<2+1=3>>3 and <<3+1=4>>4\n#### 4"
    assert gsm8k.solution_steps(sol3) == (3, 2)
    assert not gsm8k.is_multistep(sol3)
    assert gsm8k.gold_answer("x\n#### 1,080") == "1080"


def test_gsm8k_bad_line_names_file_and_line(tmp_path):
    bad = tmp_path / "train.jsonl"
    bad.write_text('{"question": "q", "answer": "a <<1=1>>1\\n#### 1"}\n{"question": "q2"}\n')
    with pytest.raises(EduFairError, match=r"train\.jsonl:2: expected an object"):
        gsm8k.build_gsm8k(tmp_path, 10, 0)


# ---------------------------------------------------------------- load_bank validation


GOOD = {
    "id": "physics-sciq-000000000001",
    "domain": "physics",
    "grade": 8,
    "question": "Which force keeps the moon in orbit?",
    "answer": "gravity",
    "answer_forms": ["gravity"],
    "source": "sciq",
    "meta": {},
}


def _write(tmp_path, domain, lines):
    path = tmp_path / f"{domain}.jsonl"
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in lines))
    return path


def test_load_bank_accepts_good_records(tmp_path):
    _write(tmp_path, "physics", [GOOD, "\n", {**GOOD, "id": "physics-sciq-2"}])
    items = load_bank("physics", tmp_path)
    assert [it.id for it in items] == ["physics-sciq-000000000001", "physics-sciq-2"]


def test_load_bank_malformed_json_names_file_and_line(tmp_path):
    _write(tmp_path, "physics", [GOOD, '{"id": "x", broken\n'])
    with pytest.raises(EduFairError) as exc:
        load_bank("physics", tmp_path)
    msg = str(exc.value)
    assert "physics.jsonl:2" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "change, pattern",
    [
        ({"question": None}, r"physics\.jsonl:2: 'question' must be"),
        ("drop:answer_forms", r"physics\.jsonl:2: missing key 'answer_forms'"),
        ("drop:id", r"physics\.jsonl:2: missing key 'id'"),
        ({"domain": "chemistry"}, r"physics\.jsonl:2: domain 'chemistry'"),
        ({"grade": 9}, r"physics\.jsonl:2: grade must be 8"),
        ({"grade": "8"}, r"physics\.jsonl:2: grade must be 8"),
        ({"answer_forms": []}, r"physics\.jsonl:2: 'answer_forms'"),
        ({"answer_forms": "gravity"}, r"physics\.jsonl:2: 'answer_forms'"),
        ({"source": "wiki"}, r"physics\.jsonl:2: unknown source"),
        ({"meta": []}, r"physics\.jsonl:2: 'meta'"),
        ({"id": GOOD["id"]}, r"physics\.jsonl:2: duplicate id"),
    ],
)
def test_load_bank_rejects_bad_records(tmp_path, change, pattern):
    bad = dict(GOOD, id="physics-sciq-2")
    if isinstance(change, str):
        bad.pop(change.split(":")[1])
    else:
        bad.update(change)
    _write(tmp_path, "physics", [GOOD, bad])
    with pytest.raises(EduFairError, match=pattern):
        load_bank("physics", tmp_path)


def test_load_bank_rejects_non_object_unknown_domain_missing_and_empty(tmp_path):
    _write(tmp_path, "physics", ["[1, 2]\n"])
    with pytest.raises(EduFairError, match=r"physics\.jsonl:1: expected a JSON object"):
        load_bank("physics", tmp_path)
    with pytest.raises(EduFairError, match="unknown domain 'biology'"):
        load_bank("biology", tmp_path)
    with pytest.raises(EduFairError, match="question bank not found"):
        load_bank("chemistry", tmp_path)
    _write(tmp_path, "chemistry", ["\n"])
    with pytest.raises(EduFairError, match="empty"):
        load_bank("chemistry", tmp_path)


# ---------------------------------------------------------------- CLI


def _run_cli(argv, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["edufair"])
    rc = cli.main(argv)
    return rc, capsys.readouterr()


def test_cli_malformed_input_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "#### 1"}\n{not json}\n')
    out = tmp_path / "out"
    rc, captured = _run_cli(
        ["build-bank", "--domains", "mathematics", "--gsm8k", str(bad), "--out", str(out)], capsys, monkeypatch
    )
    assert rc == 2
    errors = [ln for ln in captured.err.splitlines() if ln.startswith("edufair build-bank: error:")]
    assert len(errors) == 1 and f"{bad}:2:2: malformed JSON" in errors[0]  # file:line:column
    assert not (out / "mathematics.jsonl").exists()  # nothing written on failure


def test_cli_missing_input_and_bad_domain_exit_2(tmp_path, capsys, monkeypatch):
    rc, captured = _run_cli(
        ["build-bank", "--domains", "physics", "--sciq", str(tmp_path / "nope.zip"), "--out", str(tmp_path)],
        capsys,
        monkeypatch,
    )
    assert rc == 2 and "SciQ source not found" in captured.err
    rc, captured = _run_cli(["build-bank", "--domains", "biology", "--out", str(tmp_path)], capsys, monkeypatch)
    assert rc == 2 and "unknown domain 'biology'" in captured.err


@needs_gsm8k
def test_cli_builds_requested_domain(tmp_path, capsys, monkeypatch):
    rc, captured = _run_cli(
        ["build-bank", "--domains", "math", "--gsm8k", str(GSM8K_DIR), "--out", str(tmp_path), "--per-domain", "7", "--seed", "3"],
        capsys,
        monkeypatch,
    )
    assert rc == 0, captured.err
    assert re.search(r"mathematics\.jsonl\s+7 questions\s+source=gsm8k-proxy", captured.out)
    assert len(load_bank("mathematics", tmp_path)) == 7
    assert (tmp_path / "LICENSE-GSM8K.txt").is_file()


def test_unreachable_hub_is_a_one_line_error(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(EduFairError, match=r"hub copy allenai/sciq is unavailable \(ConnectionError\); pass --sciq"):
        sciq.load_sciq_train(None)
