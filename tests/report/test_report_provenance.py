"""``edufair report`` refuses to pool runs whose record provenance disagrees (runs.check_compatible)."""

import json

import pytest

from edufair_metrics.cache import model_identity
from edufair_metrics.cli import main as cli
from tests.helpers.synthetic_runs import write_run

KW = dict(conditions=("explicit",), n_questions=4)

# override of one run's provenance -> the field name the refusal must name
DIFFERENCES = [
    ({"models": {"judge": {"model": "other-judge"}}}, "judge model"),
    ({"decoding": {"judge": {"temperature": 0.7}}}, "judge settings"),
    ({"protocol_sha256": "q" * 64}, "protocol_sha256"),
    ({"judge_prompts_sha256": "k" * 64}, "judge_prompts_sha256"),
    ({"bank": {"sha256": "another-bank"}}, "bank sha256 (mathematics)"),
    ({"models": {"student": {"model_args": {"model": "other-student"}}}}, "student model"),
    ({"decoding": {"student": {"temperature": 1.0}}}, "student decoding"),
    ({"max_tutor_turns": 6}, "max_tutor_turns"),
]


def _report(tmp_path, *inputs):
    out = tmp_path / "rep"
    rc = cli(["report", *map(str, inputs), "--out", str(out), "--n-boot", "10", "--no-figures"])
    return rc, out


@pytest.mark.parametrize("override,field", DIFFERENCES, ids=[f for _, f in DIFFERENCES])
def test_refuses_to_pool_different_provenance(tmp_path, capsys, override, field):
    write_run(tmp_path / "a", "org/tutor-a", provenance={}, seed=1, **KW)
    write_run(tmp_path / "b", "org/tutor-b", provenance=override, seed=2, **KW)
    rc, out = _report(tmp_path, tmp_path / "a", tmp_path / "b")
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2
    assert len(lines) == 1, err
    assert f"{field} differs" in lines[0] and "refusing to pool" in lines[0], lines[0]
    assert not (out / "summary.md").exists()


def test_refuses_different_protocol_version(tmp_path, capsys):
    write_run(tmp_path / "a", "org/tutor-a", provenance={}, **KW)
    write_run(tmp_path / "b", "org/tutor-b", provenance={"protocol_version": "edufair-bench-0"}, **KW)
    rc, _ = _report(tmp_path, tmp_path / "a", tmp_path / "b")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "protocol version" in lines[0]


def test_refuses_mixed_provenance_inside_one_tutor_folder(tmp_path, capsys):
    # two tasks of one tutor, judged by different judges (run separately into one OUT)
    write_run(tmp_path / "o", "org/tutor-a", provenance={}, conditions=("explicit",), n_questions=4,
              timestamp="2025-01-01T00-00-00.0")
    write_run(tmp_path / "o", "org/tutor-a", provenance={"models": {"judge": {"model": "other-judge"}}},
              conditions=("implicit",), n_questions=4, timestamp="2025-01-02T00-00-00.0")
    rc, _ = _report(tmp_path, tmp_path / "o")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "judge model differs" in lines[0]


def test_pools_runs_that_differ_only_in_tutor(tmp_path, capsys):
    write_run(tmp_path / "a", "org/tutor-a", provenance={}, seed=1, **KW)
    # tutor identity, tutor decoding, tutor seed and where student/judge are served may differ
    # (identities never hold execution-only args such as base_url; older records may)
    write_run(tmp_path / "b", "org/tutor-b", seed=2, provenance={
        "models": {"tutor": model_identity("local-chat-completions", {"model": "tutor-b", "num_concurrent": 8}),
                   "student": {"model_args": {"base_url": "http://10.0.0.2:9000/v1"}},
                   "judge": {"base_url": "http://10.0.0.3:9000/v1"}},
        "decoding": {"tutor": {"temperature": 0.3, "max_gen_toks": 512}},
        "seeds": {"tutor_api_seed": 7},
    }, **KW)
    rc, out = _report(tmp_path, tmp_path / "a", tmp_path / "b")
    assert rc == 0, capsys.readouterr().err
    man = json.loads((out / "report_manifest.json").read_text())
    assert sorted(i["label"] for i in man["inputs"]) == ["org/tutor-a", "org/tutor-b"]


def test_student_identity_decides_compatibility_not_its_endpoint():
    """The student's lm-eval class is part of its identity: the same model name served by another
    backend is another student; another endpoint for the same model is not."""
    from edufair_metrics.cache import model_identity
    from edufair_metrics.runlog import compat_fields

    def fields(kind, args):
        return compat_fields({"models": {"student": model_identity(kind, args)}})["student model"]

    api = fields("local-chat-completions", {"model": "M", "base_url": "http://a:1/v1"})
    assert api == fields("local-chat-completions", {"model": "M", "base_url": "http://b:2/v1", "num_concurrent": 8})
    assert api != fields("vllm", {"model": "M"})
    assert api != fields("local-chat-completions", {"model": "other"})


@pytest.mark.parametrize("override,field", DIFFERENCES, ids=[f for _, f in DIFFERENCES])
def test_compare_refuses_what_report_refuses(tmp_path, capsys, override, field):
    """The CI gate pools two runs like a report does: a candidate measured with another judge,
    student, bank or turn budget is refused (exit 2, the field named), never passed."""
    write_run(tmp_path / "a", "org/tutor-a", provenance={}, seed=1, conditions=("explicit",), n_questions=20)
    write_run(tmp_path / "b", "org/tutor-b", provenance=override, seed=2, conditions=("explicit",), n_questions=20)
    rc = cli(["compare", "--baseline", str(tmp_path / "a"), "--candidate", str(tmp_path / "b"), "--n-boot", "20",
              "--out", str(tmp_path / "cmp")])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(err) == 1 and f"{field} differs" in err[0], err
    assert not (tmp_path / "cmp").exists()
