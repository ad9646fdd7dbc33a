"""Settings: the one precedence chain, secrets, validation (one line, did-you-mean)."""

import ast
from pathlib import Path

import pytest
import yaml

import edufair_metrics.judge.settings as judge_settings_module
from edufair_metrics.errors import EduFairError
from edufair_metrics.judge.settings import JudgeSettings
from edufair_metrics.settings import load_judge_settings, resolve_runner_settings

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
        ({"edufair": {"turns": 3}}, "unknown edufair setting 'turns'"),
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
    judge = s.judge
    assert (judge.model, judge.concurrency, judge.max_tokens, judge.base_url) == ("from-file", 3, 64, "http://yaml:1/v1")
    assert s.cache.location == tmp_path / "file-cache" / "edufair-calls.sqlite"
    monkeypatch.setenv("EDUFAIR_JUDGE_MODEL", "from-env")
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "env-cache"))
    s = resolve_runner_settings(yaml_block, {"edufair": {"config": str(f), "judge": {"concurrency": 3}}})
    assert s.judge.model == "from-env"
    assert s.cache.location == tmp_path / "env-cache" / "edufair-calls.sqlite"


def test_judge_disabled_disables_only_the_judge_and_cache_off_reaches_the_judge():
    s = resolve_runner_settings(BASE, {"edufair": {"judge": {"enabled": False}, "cache": {"enabled": False}}})
    assert s.judge_enabled is False and s.judge.enabled is False
    assert s.cache.enabled is False and s.cache.to_setting() == {"enabled": False, "path": None}


def test_empty_levels_is_an_error_not_all_levels():
    with pytest.raises(EduFairError, match="edufair.levels is empty"):
        resolve_runner_settings(BASE, {"edufair": {"levels": []}})


# ---- the one precedence chain ------------------------------------------------------------------
# defaults < task YAML < settings file < --metadata < environment < command line; each layer, when
# present, beats every layer below it, for runner, student and judge keys alike.

LAYERS = ("defaults", "yaml", "file", "metadata", "env", "cli")


def _chain(tmp_path, monkeypatch, present, setting):
    """Resolve with the layers in ``present``, each giving ``setting`` a value of its own."""
    for var in ("EDUFAIR_JUDGE_MODEL", "EDUFAIR_JUDGE_CONCURRENCY", "EDUFAIR_STUDENT_BASE_URL", "EDUFAIR_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    value = {layer: setting["value"](layer) for layer in LAYERS}
    judge_cfg = tmp_path / "judge-defaults.yaml"
    judge_cfg.write_text("judge:\n  base_url: http://defaults:1/v1\n" + setting.get("defaults_yaml", lambda v: "")(value["defaults"]))
    monkeypatch.setenv("EDUFAIR_JUDGE_CONFIG", str(judge_cfg))
    yaml_block = {**BASE, "student": {**BASE["student"], "model_args": dict(BASE["student"]["model_args"])}, "judge": {}}
    meta: dict = {}
    if "yaml" in present:
        yaml_block = setting["put"](yaml_block, value["yaml"])
    if "file" in present:
        f = tmp_path / "settings.yaml"
        f.write_text(yaml.safe_dump(setting["put"]({}, value["file"])))
        meta["config"] = str(f)
    if "metadata" in present:
        meta = setting["put"](meta, value["metadata"])
    if "env" in present and "env" in setting:
        var, text = setting["env"](value["env"])
        monkeypatch.setenv(var, text)
    cli = setting["put"]({}, value["cli"]) if "cli" in present and setting.get("cli") else None
    s = resolve_runner_settings(yaml_block, {"edufair": meta}, cli=cli)
    return setting["get"](s), value


def _put(*path):
    def put(tree, v):
        tree = dict(tree)
        node = tree
        for key in path[:-1]:
            node[key] = dict(node.get(key) or {})
            node = node[key]
        node[path[-1]] = v
        return tree
    return put


SETTINGS = {
    "runner max_tutor_turns": dict(value=lambda layer: 2 + LAYERS.index(layer), put=_put("max_tutor_turns"),
                                   get=lambda s: s.max_tutor_turns, default=10),
    "student model_args.base_url": dict(value=lambda layer: f"http://{layer}:9/v1/chat/completions",
                                        put=_put("student", "model_args", "base_url"),
                                        get=lambda s: s.student.model_args["base_url"],
                                        env=lambda v: ("EDUFAIR_STUDENT_BASE_URL", v)),
    "judge model": dict(value=lambda layer: f"judge-from-{layer}", put=_put("judge", "model"), get=lambda s: s.judge.model,
                        defaults_yaml=lambda v: f"  model: {v}\n", env=lambda v: ("EDUFAIR_JUDGE_MODEL", v), cli=True),
    "judge concurrency": dict(value=lambda layer: 1 + LAYERS.index(layer), put=_put("judge", "concurrency"),
                              get=lambda s: s.judge.concurrency, defaults_yaml=lambda v: f"  concurrency: {v}\n",
                              env=lambda v: ("EDUFAIR_JUDGE_CONCURRENCY", str(v)), cli=True),
}


def _layers_of(setting) -> tuple[str, ...]:
    """The layers a setting has: defaults (a default value or a defaults-YAML line), the task YAML,
    a config file and metadata (always), an environment variable, a CLI flag."""
    has = {"defaults": "defaults_yaml" in setting or "default" in setting, "yaml": True, "file": True, "metadata": True,
           "env": "env" in setting, "cli": bool(setting.get("cli"))}
    return tuple(layer for layer in LAYERS if has[layer])


# only the layers each setting has (runner max_tutor_turns: no env or CLI layer; the student's
# base_url: no defaults or CLI layer), so no combination is skipped on every run
LAYER_CASES = [(name, top) for name in sorted(SETTINGS) for top in _layers_of(SETTINGS[name])]


def test_every_setting_is_checked_on_its_own_layers():
    assert len(LAYER_CASES) == 20
    assert _layers_of(SETTINGS["runner max_tutor_turns"]) == ("defaults", "yaml", "file", "metadata")
    assert _layers_of(SETTINGS["student model_args.base_url"]) == ("yaml", "file", "metadata", "env")


@pytest.mark.parametrize("name, top", LAYER_CASES)
def test_each_layer_beats_every_layer_below_it(tmp_path, monkeypatch, name, top):
    setting = SETTINGS[name]
    layers = LAYERS[: LAYERS.index(top) + 1]
    got, value = _chain(tmp_path, monkeypatch, set(layers), setting)
    expected = setting["default"] if top == "defaults" and "default" in setting else value[top]
    assert got == expected


def test_load_judge_settings_is_the_same_chain_without_runner_layers(tmp_path, monkeypatch):
    cfg = tmp_path / "j.yaml"
    cfg.write_text("judge: {base_url: 'http://cfg:1/v1', model: cfg}\n")
    monkeypatch.setenv("EDUFAIR_JUDGE_CONFIG", str(cfg))
    monkeypatch.delenv("EDUFAIR_JUDGE_MODEL", raising=False)
    runner = resolve_runner_settings(BASE, {"edufair": {"judge": {"max_tokens": 99}}})
    judge = load_judge_settings(metadata={"max_tokens": 99})
    assert runner.judge == judge and judge.model == "cfg"
    monkeypatch.setenv("EDUFAIR_JUDGE_MODEL", "env")
    assert load_judge_settings(cli={"model": None}).model == "env"  # a flag not given leaves the value
    assert load_judge_settings(cli={"model": "flag"}).model == "flag"


def test_a_student_model_in_any_layer_brings_its_own_model_args(tmp_path, monkeypatch):
    monkeypatch.delenv("EDUFAIR_STUDENT_BASE_URL", raising=False)
    f = tmp_path / "s.yaml"
    f.write_text("student: {model: hf, model_args: {pretrained: tiny}}\n")
    s = resolve_runner_settings(BASE, {"edufair": {"config": str(f), "student": {"model_args": {"dtype": "float32"}}}})
    assert (s.student.model, s.student.model_args) == ("hf", {"pretrained": "tiny", "dtype": "float32"})
    monkeypatch.setenv("EDUFAIR_STUDENT_BASE_URL", "http://env:1/v1/chat/completions")  # env still applies on top
    s = resolve_runner_settings(BASE, {"edufair": {"student": {"model": "vllm"}}})
    assert s.student.model_args == {"base_url": "http://env:1/v1/chat/completions"}


def test_cache_keys_follow_the_chain(tmp_path, monkeypatch):
    monkeypatch.delenv("EDUFAIR_CACHE_DIR", raising=False)
    yaml_block = {**BASE, "cache": {"enabled": True, "dir": str(tmp_path / "yaml")}}
    s = resolve_runner_settings(yaml_block, {"edufair": {"cache": {"dir": str(tmp_path / "meta")}}})
    assert s.cache.location == tmp_path / "meta" / "edufair-calls.sqlite"
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "env"))
    s = resolve_runner_settings(yaml_block, {"edufair": {"cache": {"dir": str(tmp_path / "meta")}}})
    assert s.cache.location == tmp_path / "env" / "edufair-calls.sqlite"
    s = resolve_runner_settings(yaml_block, {"edufair": {"cache": {"path": str(tmp_path / "p.sqlite")}}})
    assert s.cache.location == tmp_path / "p.sqlite"  # a file beats any folder
    s = resolve_runner_settings(yaml_block, {"edufair": {}}, cli={"cache": "off"})
    assert s.cache.enabled is False and s.cache.location is None


def test_null_means_not_given_in_the_judge_block_except_reasoning_effort(tmp_path, monkeypatch):
    monkeypatch.delenv("EDUFAIR_JUDGE_CONFIG", raising=False)
    s = resolve_runner_settings(BASE, {"edufair": {"judge": {"base_url": None, "model": None, "reasoning_effort": None}}})
    assert s.judge.base_url == "http://localhost:8000/v1" and s.judge.model == "openai/gpt-oss-120b"  # packaged defaults
    assert s.judge.reasoning_effort is None  # null sends nothing
    s = resolve_runner_settings({**BASE, "judge": {"reasoning_effort": None}}, {"edufair": {"judge": None}})
    assert s.judge.reasoning_effort is None  # a null block is "not given"


def test_a_disabled_judge_needs_no_endpoint(tmp_path, monkeypatch):
    empty = tmp_path / "empty.yaml"
    empty.write_text("judge: {}\n")
    monkeypatch.setenv("EDUFAIR_JUDGE_CONFIG", str(empty))
    s = resolve_runner_settings(BASE, {"edufair": {"judge": {"enabled": False}}})
    assert s.judge_enabled is False and s.judge.base_url is None
    with pytest.raises(EduFairError, match="judge endpoint not set"):
        resolve_runner_settings(BASE, {})
    with pytest.raises(EduFairError, match="unknown edufair setting 'judge.modle'"):  # typos are caught even so
        resolve_runner_settings(BASE, {"edufair": {"judge": {"enabled": False, "modle": "x"}}})


def test_the_resolved_judge_travels_as_plain_data_and_is_not_resolved_again(monkeypatch):
    s = resolve_runner_settings(BASE, {"edufair": {"judge": {"model": "m1", "base_url": "http://j:1/v1"}}})
    monkeypatch.setenv("EDUFAIR_JUDGE_MODEL", "changed-later")  # the filter does not read the environment again
    assert JudgeSettings.from_resolved(s.judge.to_setting()) == s.judge


# ---- typos anywhere are one-line did-you-mean errors --------------------------------------------

TYPOS = [
    ({"student": {"model_arg": {"x": 1}}}, "student.model_arg", "model_args"),
    ({"cache": {"enable": False}}, "cache.enable", "enabled"),
    ({"judge": {"base_ur": "http://x/v1"}}, "judge.base_ur", "base_url"),
    ({"sample": {"fractoin": 0.3}}, "sample.fractoin", "fraction"),
    ({"placebo": {"levle": "female"}}, "placebo.levle", "level"),
    ({"max_turns": 3}, "max_turns", "max_tutor_turns"),
]


@pytest.mark.parametrize("where", ["yaml", "file", "metadata"])
@pytest.mark.parametrize("block, name, guess", TYPOS, ids=[t[1] for t in TYPOS])
def test_nested_typos_are_one_line_did_you_mean_errors(tmp_path, where, block, name, guess):
    yaml_block, meta, source = dict(BASE), {}, "--metadata"
    if where == "yaml":
        yaml_block, source = {**BASE, **{k: {**(BASE.get(k) or {}), **v} if isinstance(v, dict) else v for k, v in block.items()}}, "task YAML"
    elif where == "file":
        f = tmp_path / "s.yaml"
        f.write_text(yaml.safe_dump(block))
        meta, source = {"config": str(f)}, f"settings file {f}"
    else:
        meta = block
    with pytest.raises(EduFairError) as ei:
        resolve_runner_settings(yaml_block, {"edufair": meta})
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(source), msg
    assert f"unknown edufair setting '{name}'" in msg and f"did you mean '{guess}'?" in msg, msg


def test_a_typo_in_the_judge_config_names_the_file(tmp_path):
    cfg = tmp_path / "judge.yaml"
    cfg.write_text("judge:\n  base_url: http://x/v1\n  concurrancy: 3\n")
    with pytest.raises(EduFairError, match=r"judge config .*judge.yaml: unknown edufair setting 'judge.concurrancy' \(did you mean 'concurrency'\?\)"):
        load_judge_settings(config_path=cfg)


@pytest.mark.parametrize("key", ["edufiar", "edufair_", "EduFair", "edu_fair", "Edufair "])
def test_near_misses_of_edufair_at_the_top_of_metadata_are_errors(key):
    with pytest.raises(EduFairError) as ei:
        resolve_runner_settings(BASE, {key: {"max_tutor_turns": 2}})
    msg = str(ei.value)
    assert "\n" not in msg and f"'{key}'" in msg and "did you mean 'edufair'?" in msg, msg


def test_lm_eval_keys_at_the_top_of_metadata_are_fine():
    meta = {"version": 1.0, "config_source": "x.yaml", "model": "fake-tutor", "base_url": "http://t:1/v1",
            "num_concurrent": 2, "pretrained": "gpt2", "edufair_calls": {}, "edufair": {"max_tutor_turns": 2}}
    assert resolve_runner_settings(BASE, meta).max_tutor_turns == 2


# ---- pydantic never reaches the user ------------------------------------------------------------

BAD_VALUES = [
    ({"max_tutor_turns": 0}, "edufair.max_tutor_turns must be a positive integer, got 0"),
    ({"max_tutor_turns": True}, "edufair.max_tutor_turns must be a positive integer, got True"),
    ({"levels": "female"}, "edufair.levels must be a list of level names"),
    ({"preflight": "yes"}, "edufair.preflight must be true or false, got 'yes'"),
    ({"student": {"model": ""}}, "edufair.student.model must be a non-empty string"),
    ({"student": {"model_args": 3}}, "edufair.student.model_args must be a mapping or 'k=v,...' string, got 3"),
    ({"judge": {"concurrency": "8"}}, "edufair.judge.concurrency must be a positive integer, got '8'"),
    ({"judge": {"timeout_s": float("inf")}}, "edufair.judge.timeout_s must be a number > 0, got inf"),
    ({"judge": {"base_url": "localhost:8000"}}, "edufair.judge.base_url must start with http:// or https://"),
    ({"judge": {"structured_output": "grammar"}}, "edufair.judge.structured_output must be one of off, json_object, json_schema"),
    ({"judge": "gpt"}, "edufair.judge must be a mapping of judge settings"),
    ({"cache": {"enabled": "no"}}, "edufair.cache.enabled must be true or false, got 'no'"),
    ({"cache": "off"}, "edufair.cache must be a mapping like {enabled: true, path: FILE, dir: FOLDER}"),
    ({"sample": {"fraction": 0.3, "seed": "0"}}, "edufair.sample.seed must be an integer, got '0'"),
    ({"placebo": {"level": "female", "replicates": 1}}, "edufair.placebo.replicates must be an integer >= 2, got 1"),
    ({"placebo": {"replicates": 2}}, "edufair.placebo.level is missing"),
]


@pytest.mark.parametrize("block, message", BAD_VALUES, ids=[m.split(" ")[0] for _, m in BAD_VALUES])
def test_validation_errors_are_one_line_naming_the_setting_and_its_layer(block, message):
    with pytest.raises(EduFairError) as ei:
        resolve_runner_settings(BASE, {"edufair": block})
    msg = str(ei.value)
    assert "\n" not in msg and "pydantic" not in msg.lower() and "Input should" not in msg, msg
    assert msg.startswith("--metadata: ") and message in msg, msg


def test_a_bad_value_names_the_layer_that_set_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EDUFAIR_JUDGE_CONCURRENCY", "0")
    with pytest.raises(EduFairError, match=r"^environment variable EDUFAIR_JUDGE_CONCURRENCY: edufair.judge.concurrency must be"):
        resolve_runner_settings(BASE, {})
    monkeypatch.delenv("EDUFAIR_JUDGE_CONCURRENCY")
    f = tmp_path / "s.yaml"
    f.write_text("max_tutor_turns: -1\n")
    with pytest.raises(EduFairError, match=r"^settings file .*s.yaml: edufair.max_tutor_turns must be a positive integer"):
        resolve_runner_settings(BASE, {"edufair": {"config": str(f)}})
    f.write_text("max_tutor_turns: [1\n")
    with pytest.raises(EduFairError, match=r"s.yaml:2:1: invalid YAML in the settings file"):
        resolve_runner_settings(BASE, {"edufair": {"config": str(f)}})


def test_judge_settings_no_longer_go_through_the_cache_module():
    tree = ast.parse(Path(judge_settings_module.__file__).read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "edufair_metrics.cache" not in mods and "edufair_metrics.secrets" in mods
