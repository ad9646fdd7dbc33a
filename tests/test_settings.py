"""Runner settings: layering, secrets, validation."""

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.settings import load_judge_settings
from edufair_metrics.settings import resolve_runner_settings

BASE = {
    "max_tutor_turns": 10,
    "student": {
        "model": "local-chat-completions",
        "model_args": {"model": "meta-llama/Llama-3.1-8B-Instruct", "base_url": "http://localhost:8001/v1/chat/completions"},
        "generation_kwargs": {"temperature": 0, "max_gen_toks": 2048, "until": []},
    },
    "judge": {},
}


def test_metadata_overrides_yaml_and_env_overrides_metadata(monkeypatch):
    monkeypatch.setenv("EDUFAIR_STUDENT_BASE_URL", "http://replica:9000/v1/chat/completions")
    s = resolve_runner_settings(BASE, {"edufair": {"max_tutor_turns": 3, "student": {"model_args": {"num_concurrent": 8}}}})
    assert s.max_tutor_turns == 3
    args = s.student.model_args
    assert args["num_concurrent"] == 8 and args["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert args["base_url"] == "http://replica:9000/v1/chat/completions"


def test_a_new_student_model_does_not_inherit_the_default_endpoint_args():
    s = resolve_runner_settings(BASE, {"edufair": {"student": {"model": "vllm", "model_args": {"pretrained": "x/y"}}}})
    assert s.student.model_args == {"pretrained": "x/y"}
    assert s.student.generation_kwargs["max_gen_toks"] == 2048


def test_settings_file_layer(tmp_path):
    f = tmp_path / "student.yaml"
    f.write_text("student:\n  model: hf\n  model_args: {pretrained: tiny}\nmax_tutor_turns: 4\n")
    s = resolve_runner_settings(BASE, {"edufair": {"config": str(f)}})
    assert s.student.to_dict() == {**BASE["student"], "batch_size": "auto", "model": "hf", "model_args": {"pretrained": "tiny"}}
    assert s.max_tutor_turns == 4


@pytest.mark.parametrize(
    "meta,message",
    [
        ({"edufair": "max_tutor_turns=3"}, "must be a JSON object"),
        ({"edufair": {"max_tutor_turns": "ten"}}, "max_tutor_turns must be a positive integer"),
        ({"edufair": {"turns": 3}}, "unknown edufair setting(s) turns"),
        ({"edufair": {"judge": {"api_key": "sk-live-123456"}}}, "looks like a secret"),
        ({"edufair": {"config": "/nonexistent/settings.yaml"}}, "cannot read settings file"),
    ],
)
def test_bad_settings_are_one_line_errors(meta, message):
    with pytest.raises(EduFairError) as err:
        resolve_runner_settings(BASE, meta)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_lm_eval_model_args_named_like_tokens_are_not_secrets():
    s = resolve_runner_settings(BASE, {"edufair": {"student": {"model_args": {"tokenized_requests": False}}}})
    assert s.student.model_args["tokenized_requests"] is False


def test_one_precedence_order_for_runner_judge_and_cache(tmp_path, monkeypatch):
    """YAML < settings file < --metadata < environment, for runner, judge and cache keys alike."""
    f = tmp_path / "s.yaml"
    f.write_text("max_tutor_turns: 4\njudge: {model: from-file, concurrency: 2}\ncache: {dir: %s}\n" % (tmp_path / "file-cache"))
    yaml_block = {**BASE, "judge": {"model": "from-yaml", "max_tokens": 64, "base_url": "http://yaml:1/v1"}}
    monkeypatch.delenv("EDUFAIR_CACHE_DIR", raising=False)
    s = resolve_runner_settings(yaml_block, {"edufair": {"config": str(f), "judge": {"concurrency": 3}}})
    assert s.max_tutor_turns == 4
    judge = load_judge_settings(metadata=s.judge)
    assert (judge.model, judge.concurrency, judge.max_tokens, judge.base_url) == ("from-file", 3, 64, "http://yaml:1/v1")
    assert s.cache.location == tmp_path / "file-cache" / "edufair-calls.sqlite"
    monkeypatch.setenv("EDUFAIR_JUDGE_MODEL", "from-env")
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "env-cache"))
    s = resolve_runner_settings(yaml_block, {"edufair": {"config": str(f), "judge": {"concurrency": 3}}})
    assert load_judge_settings(metadata=s.judge).model == "from-env"
    assert s.cache.location == tmp_path / "env-cache" / "edufair-calls.sqlite"


def test_judge_disabled_disables_only_the_judge_and_cache_off_reaches_the_judge():
    s = resolve_runner_settings(BASE, {"edufair": {"judge": {"enabled": False}, "cache": {"enabled": False}}})
    assert s.judge_enabled is False and "enabled" not in s.judge
    assert s.cache.enabled is False and s.cache.to_setting() == {"enabled": False, "path": None}


def test_empty_levels_is_an_error_not_all_levels():
    with pytest.raises(EduFairError, match="edufair.levels is empty"):
        resolve_runner_settings(BASE, {"edufair": {"levels": []}})
